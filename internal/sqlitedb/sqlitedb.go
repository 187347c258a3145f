// Package sqlitedb opens the SQLite files mythex keeps state in (publish's
// releases, each agent's deploy history) one way: modernc.org/sqlite (pure
// Go), WAL, a 10 s busy timeout so several processes can share a file, and
// synchronous FULL so a committed transaction survives a crash.
package sqlitedb

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// Open opens (creating if needed) the database at path, making its
// directory (0700), and applies schema (idempotent DDL). Errors are wrapped
// with what (e.g. "release store") and the path.
func Open(what, path, schema string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open %s %s: %w", what, path, err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s %s: %w", what, path, err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s %s: %w", what, path, err)
	}
	return db, nil
}
