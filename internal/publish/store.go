package publish

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mythex/mythex/internal/sqlitedb"
)

// ErrReleaseNotFound is returned (wrapped) for an unknown app or release id.
var ErrReleaseNotFound = errors.New("release not found")

// Store keeps releases in SQLite (modernc.org/sqlite) at one file under the
// state dir. Every change is one transaction, so a crash leaves either the old
// record or the new one. Releases are never deleted: a release's config is
// what a rollback restores. Safe for concurrent use, including by several
// processes (WAL, busy timeout).
type Store struct {
	db *sql.DB
}

// DBFile is the store's file name inside the state dir.
const DBFile = "publish.db"

const schema = `
CREATE TABLE IF NOT EXISTS releases (
	app        TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	status     TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	live_at    INTEGER NOT NULL DEFAULT 0,
	record     TEXT    NOT NULL,
	PRIMARY KEY (app, seq)
);
CREATE TABLE IF NOT EXISTS apps (
	app     TEXT PRIMARY KEY,
	current INTEGER NOT NULL
);`

// OpenStore opens (creating if needed) the store at path, making its
// directory (0700). Errors are wrapped with the path.
func OpenStore(path string) (*Store, error) {
	db, err := sqlitedb.Open("release store", path, schema)
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Create records r as a new release of r.App: it assigns Seq and ID (the next
// number for the app) and CreatedAt/UpdatedAt when zero, and returns the
// stored release.
func (s *Store) Create(ctx context.Context, r Release) (Release, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Release{}, fmt.Errorf("create release of %s: %w", r.App, err)
	}
	defer tx.Rollback()
	var max sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(seq) FROM releases WHERE app = ?`, r.App).Scan(&max); err != nil {
		return Release{}, fmt.Errorf("create release of %s: %w", r.App, err)
	}
	r.Seq = int(max.Int64) + 1
	r.ID = "v" + strconv.Itoa(r.Seq)
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	if err := put(ctx, tx, r, true); err != nil {
		return Release{}, err
	}
	if err := tx.Commit(); err != nil {
		return Release{}, fmt.Errorf("create release %s/%s: %w", r.App, r.ID, err)
	}
	return r, nil
}

// Save replaces the stored record of r (matched by App and ID).
func (s *Store) Save(ctx context.Context, r Release) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save release %s/%s: %w", r.App, r.ID, err)
	}
	defer tx.Rollback()
	if err := put(ctx, tx, r, false); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save release %s/%s: %w", r.App, r.ID, err)
	}
	return nil
}

func put(ctx context.Context, tx *sql.Tx, r Release, insert bool) error {
	rec, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("save release %s/%s: %w", r.App, r.ID, err)
	}
	if insert {
		_, err = tx.ExecContext(ctx, `INSERT INTO releases (app, seq, status, created_at, live_at, record) VALUES (?, ?, ?, ?, ?, ?)`,
			r.App, r.Seq, string(r.Status), ms(r.CreatedAt), ms(r.LiveAt), string(rec))
	} else {
		var res sql.Result
		res, err = tx.ExecContext(ctx, `UPDATE releases SET status = ?, live_at = ?, record = ? WHERE app = ? AND seq = ?`,
			string(r.Status), ms(r.LiveAt), string(rec), r.App, r.Seq)
		if err == nil {
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("save release %s/%s: %w", r.App, r.ID, ErrReleaseNotFound)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("save release %s/%s: %w", r.App, r.ID, err)
	}
	return nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Get returns release id ("v3" or "3") of app.
func (s *Store) Get(ctx context.Context, app, id string) (Release, error) {
	seq, err := parseID(id)
	if err != nil {
		return Release{}, fmt.Errorf("release %s/%s: %w", app, id, ErrReleaseNotFound)
	}
	return s.one(ctx, `SELECT record FROM releases WHERE app = ? AND seq = ?`, app, seq)
}

func parseID(id string) (int, error) {
	if len(id) > 1 && id[0] == 'v' {
		id = id[1:]
	}
	return strconv.Atoi(id)
}

func (s *Store) one(ctx context.Context, q string, args ...any) (Release, error) {
	var rec string
	err := s.db.QueryRowContext(ctx, q, args...).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return Release{}, fmt.Errorf("release of %v: %w", args[0], ErrReleaseNotFound)
	}
	if err != nil {
		return Release{}, fmt.Errorf("read release of %v: %w", args[0], err)
	}
	var r Release
	if err := json.Unmarshal([]byte(rec), &r); err != nil {
		return Release{}, fmt.Errorf("decode release of %v: %w", args[0], err)
	}
	return r, nil
}

// List returns app's releases, newest first; app "" lists every app's.
func (s *Store) List(ctx context.Context, app string) ([]Release, error) {
	q, args := `SELECT record FROM releases ORDER BY app, seq DESC`, []any{}
	if app != "" {
		q, args = `SELECT record FROM releases WHERE app = ? ORDER BY seq DESC`, []any{app}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	defer rows.Close()
	var out []Release
	for rows.Next() {
		var rec string
		if err := rows.Scan(&rec); err != nil {
			return nil, fmt.Errorf("list releases: %w", err)
		}
		var r Release
		if err := json.Unmarshal([]byte(rec), &r); err != nil {
			return nil, fmt.Errorf("decode release: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// LastGood returns app's last known good release: the newest one judged live
// and not failed since, other than except (a release being judged or rolled
// back). ok is false when there is none.
func (s *Store) LastGood(ctx context.Context, app, except string) (r Release, ok bool, err error) {
	exceptSeq := -1
	if except != "" {
		if exceptSeq, err = parseID(except); err != nil {
			return Release{}, false, fmt.Errorf("last good release of %s: bad id %q", app, except)
		}
	}
	r, err = s.one(ctx, `SELECT record FROM releases WHERE app = ? AND status = ? AND seq != ? ORDER BY seq DESC LIMIT 1`,
		app, string(ReleaseLive), exceptSeq)
	if errors.Is(err, ErrReleaseNotFound) {
		return Release{}, false, nil
	}
	return r, err == nil, err
}

// Current returns the release serving app now (set by SetCurrent). ok is
// false when none is recorded.
func (s *Store) Current(ctx context.Context, app string) (r Release, ok bool, err error) {
	r, err = s.one(ctx, `SELECT r.record FROM releases r JOIN apps a ON a.app = r.app AND a.current = r.seq WHERE a.app = ?`, app)
	if errors.Is(err, ErrReleaseNotFound) {
		return Release{}, false, nil
	}
	return r, err == nil, err
}

// SetCurrent records release id as the one serving app.
func (s *Store) SetCurrent(ctx context.Context, app, id string) error {
	seq, err := parseID(id)
	if err != nil {
		return fmt.Errorf("set current release of %s: bad id %q", app, id)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO apps (app, current) VALUES (?, ?) ON CONFLICT(app) DO UPDATE SET current = excluded.current`, app, seq); err != nil {
		return fmt.Errorf("set current release of %s: %w", app, err)
	}
	return nil
}

// Apps returns the apps that have a current release, sorted.
func (s *Store) Apps(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT app FROM apps ORDER BY app`)
	if err != nil {
		return nil, fmt.Errorf("list apps: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("list apps: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
