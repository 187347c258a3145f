// Package history keeps the record of every deploy and rollback on the host
// it touched: each agent holds its own host's history in a SQLite file
// (modernc.org/sqlite, pure Go) in its state dir, so the answer to "what
// happened?" is the same whoever asks and from whichever machine; `mythex
// history` merges the hosts' records by deploy id.
package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/sqlitedb"
)

// DBFile is the store's file name inside an agent's state dir.
const DBFile = "history.db"

// Kinds of record.
const (
	// KindDeploy is a rolling deploy of a new version.
	KindDeploy = "deploy"
	// KindRollback is `mythex rollback`: the fleet back to a version it ran.
	KindRollback = "rollback"
)

// Results of a record.
const (
	ResultOK         = "ok"
	ResultFailed     = "failed"
	ResultRolledBack = "rolled_back"
)

// Phase is how long one phase of the host's deploy took.
type Phase struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// Record is one deploy (or rollback) as one host saw it.
type Record struct {
	// ID identifies the deploy across hosts (the same on every host).
	ID string `json:"id"`
	// Kind is deploy or rollback.
	Kind string `json:"kind"`
	// Host is the host this record is of.
	Host string `json:"host"`
	// Who is the deploy's holder, e.g. "deploy v2 by alice@ci".
	Who string `json:"who"`
	// Started and Ended bound the deploy (the deployer's clock).
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// From is the version the host ran before; To the version deployed.
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// Result is ok, failed or rolled_back, for the whole deploy.
	Result string `json:"result"`
	// HostResult is this host's own outcome (ok, failed, rolled_back,
	// untouched).
	HostResult string `json:"host_result"`
	// Phases are this host's phase times.
	Phases []Phase `json:"phases,omitempty"`
	// Error says why the deploy failed or was rolled back.
	Error string `json:"error,omitempty"`
	// Timeline is set by List when this host keeps the deploy's timeline
	// (its recording, for mythex history --report); a record is stored
	// without it (PutTimeline adds the timeline).
	Timeline bool `json:"timeline,omitempty"`
}

// ErrInvalid is matched by Append's error for a record missing its id,
// host, version or result, or with fields too long to keep.
var ErrInvalid = errors.New("invalid history record")

// Store is one host's history. Safe for concurrent use, including by several
// processes (WAL, busy timeout); every Append is one transaction.
type Store struct {
	db *sql.DB
	// keepTimelines is KeepTimelines (tests lower it).
	keepTimelines int
}

const schema = `
CREATE TABLE IF NOT EXISTS records (
	id       TEXT    NOT NULL,
	host     TEXT    NOT NULL,
	started  INTEGER NOT NULL,
	record   TEXT    NOT NULL,
	PRIMARY KEY (id, host)
);
CREATE INDEX IF NOT EXISTS records_started ON records(started);
CREATE TABLE IF NOT EXISTS timelines (
	id       TEXT    NOT NULL,
	host     TEXT    NOT NULL,
	started  INTEGER NOT NULL,
	data     BLOB    NOT NULL,
	PRIMARY KEY (id, host)
);`

// Open opens (creating if needed) the store at path.
func Open(path string) (*Store, error) {
	db, err := sqlitedb.Open("history", path, schema)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, keepTimelines: KeepTimelines}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// maxRecord bounds a stored record (hostile or broken clients).
const maxRecord = 64 << 10

// Validate checks r before it is stored.
func Validate(r Record) error {
	switch {
	case r.ID == "" || len(r.ID) > 128:
		return fmt.Errorf("%w: id must be 1–128 characters", ErrInvalid)
	case r.Host == "":
		return fmt.Errorf("%w: no host", ErrInvalid)
	case r.To == "":
		return fmt.Errorf("%w: no version (to)", ErrInvalid)
	case r.Result != ResultOK && r.Result != ResultFailed && r.Result != ResultRolledBack:
		return fmt.Errorf("%w: result %q, want ok, failed or rolled_back", ErrInvalid, r.Result)
	case r.Kind != KindDeploy && r.Kind != KindRollback:
		return fmt.Errorf("%w: kind %q, want deploy or rollback", ErrInvalid, r.Kind)
	}
	return nil
}

// Append stores r, replacing an earlier record of the same deploy id and
// host (a retried write is harmless). Errors: ErrInvalid; the database's.
func (s *Store) Append(ctx context.Context, r Record) error {
	if err := Validate(r); err != nil {
		return err
	}
	r.Timeline = false // List says it, from the timelines table
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if len(b) > maxRecord {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalid, len(b), maxRecord)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO records(id, host, started, record) VALUES(?, ?, ?, ?)
		ON CONFLICT(id, host) DO UPDATE SET started = excluded.started, record = excluded.record`,
		r.ID, r.Host, r.Started.UnixNano(), string(b))
	if err != nil {
		return fmt.Errorf("append history %s: %w", r.ID, err)
	}
	return nil
}

// List returns the newest limit records (limit ≤ 0: all), newest first;
// Record.Timeline says which have a timeline.
func (s *Store) List(ctx context.Context, limit int) ([]Record, error) {
	if limit <= 0 {
		limit = -1
	}
	return s.query(ctx, "list history", `SELECT r.record, t.id IS NOT NULL FROM records r
		LEFT JOIN timelines t ON t.id = r.id AND t.host = r.host
		ORDER BY r.started DESC, r.id DESC LIMIT ?`, limit)
}

// Find returns the records of deploy id (one per host this store keeps; an
// agent's store keeps its own host's), none when there is no such deploy.
func (s *Store) Find(ctx context.Context, id string) ([]Record, error) {
	return s.query(ctx, "find history "+id, `SELECT r.record, t.id IS NOT NULL FROM records r
		LEFT JOIN timelines t ON t.id = r.id AND t.host = r.host
		WHERE r.id = ? ORDER BY r.host`, id)
}

func (s *Store) query(ctx context.Context, what, q string, args ...any) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var raw string
		var timeline bool
		if err := rows.Scan(&raw, &timeline); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		var r Record
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return nil, fmt.Errorf("%s: a corrupt record: %w", what, err)
		}
		r.Timeline = timeline
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
