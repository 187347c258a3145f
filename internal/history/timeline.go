package history

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// A timeline is a deploy's recording (package deployrec's encoding: phase
// events, the load balancer's view of each target, the prober's seconds),
// kept beside the host's record so `mythex history --report` can draw the
// deploy's report later. The store keeps it as opaque bytes, bounded.
const (
	// MaxTimeline is the most bytes one timeline may take (deployrec's
	// MaxEncoded is the same bound).
	MaxTimeline = 1 << 20
	// KeepTimelines is how many deploys' timelines a store keeps; older
	// deploys keep their records, without a timeline.
	KeepTimelines = 200
)

// Errors of the timeline methods, matched with errors.Is.
var (
	// ErrNoRecord: there is no record of that deploy for that host to
	// attach a timeline to.
	ErrNoRecord = errors.New("no such deploy record")
	// ErrNoTimeline: the deploy was recorded without a timeline (by an
	// older mythex, or its timeline was pruned or never arrived).
	ErrNoTimeline = errors.New("this deploy was recorded without a timeline")
	// ErrNotFound: no deploy has the id asked for.
	ErrNotFound = errors.New("no such deploy")
)

// PutTimeline keeps data as the timeline of deploy id on host, replacing an
// earlier one, and prunes timelines beyond the newest KeepTimelines. The
// record (Append) must be stored first. The store reads data no further
// than its first bytes (gzip or a JSON object); the reader decodes it, and
// must bound it. Errors: ErrInvalid (empty, over MaxTimeline, neither gzip
// nor JSON), ErrNoRecord, the database's.
func (s *Store) PutTimeline(ctx context.Context, id, host string, data []byte) error {
	switch {
	case len(data) == 0:
		return fmt.Errorf("%w: empty timeline", ErrInvalid)
	case len(data) > MaxTimeline:
		return fmt.Errorf("%w: timeline of %d KB, at most %d KB", ErrInvalid, len(data)>>10, MaxTimeline>>10)
	case !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) && data[0] != '{':
		return fmt.Errorf("%w: a timeline is a recording, gzipped or JSON", ErrInvalid)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put timeline %s: %w", id, err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit: ErrTxDone, nothing undone
	var started int64
	err = tx.QueryRowContext(ctx, `SELECT started FROM records WHERE id = ? AND host = ?`, id, host).Scan(&started)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s on %s", ErrNoRecord, id, host)
	}
	if err != nil {
		return fmt.Errorf("put timeline %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO timelines(id, host, started, data) VALUES(?, ?, ?, ?)
		ON CONFLICT(id, host) DO UPDATE SET started = excluded.started, data = excluded.data`, id, host, started, data); err != nil {
		return fmt.Errorf("put timeline %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM timelines WHERE host = ? AND id NOT IN
		(SELECT id FROM timelines WHERE host = ? ORDER BY started DESC, id DESC LIMIT ?)`, host, host, s.keepTimelines); err != nil {
		return fmt.Errorf("put timeline %s: prune: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put timeline %s: %w", id, err)
	}
	return nil
}

// Timeline returns the timeline of deploy id on host. Errors: ErrNoTimeline,
// the database's.
func (s *Store) Timeline(ctx context.Context, id, host string) ([]byte, error) {
	var data []byte
	err := s.db.QueryRowContext(ctx, `SELECT data FROM timelines WHERE id = ? AND host = ?`, id, host).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s on %s", ErrNoTimeline, id, host)
	}
	if err != nil {
		return nil, fmt.Errorf("timeline %s: %w", id, err)
	}
	return data, nil
}

// TimelineHosts are the hosts of d whose agents keep its timeline, in host
// order: where `mythex history --report` asks for it.
func (d Deploy) TimelineHosts() []string {
	var out []string
	for _, r := range d.Hosts {
		if r.Timeline {
			out = append(out, r.Host)
		}
	}
	return out
}

// ReadTimeline asks d's hosts that keep its timeline (TimelineHosts), one
// after the other, and returns the first that get returns and decode
// accepts, with the host it came from. A host that fails (unreachable, a
// corrupt or oversize timeline) is passed over; its error is in the one
// returned when none succeeds. Errors: ErrNoTimeline when no host keeps one;
// else the hosts' errors, joined.
func ReadTimeline[T any](ctx context.Context, d Deploy, get func(ctx context.Context, host string) ([]byte, error), decode func([]byte) (T, error)) (T, string, error) {
	var zero T
	hosts := d.TimelineHosts()
	if len(hosts) == 0 {
		return zero, "", fmt.Errorf("deploy %s: %w (deploys by an older mythex or to older agents keep none, and a host keeps the newest %d only): no report can be drawn", d.ID, ErrNoTimeline, KeepTimelines)
	}
	var errs []error
	for _, h := range hosts {
		b, err := get(ctx, h)
		if err == nil {
			var v T
			if v, err = decode(b); err == nil {
				return v, h, nil
			}
		}
		errs = append(errs, fmt.Errorf("host %s: %w", h, err))
		if ctx.Err() != nil {
			break
		}
	}
	return zero, "", fmt.Errorf("deploy %s: no host served a timeline that could be read: %w", d.ID, errors.Join(errs...))
}

// Pick returns the deploy with id among deploys, or the newest when id is
// empty. Errors: ErrNotFound.
func Pick(deploys []Deploy, id string) (Deploy, error) {
	if id == "" {
		if len(deploys) == 0 {
			return Deploy{}, fmt.Errorf("%w: no deploy recorded yet", ErrNotFound)
		}
		return deploys[0], nil // Merge sorts newest first
	}
	for _, d := range deploys {
		if d.ID == id {
			return d, nil
		}
	}
	return Deploy{}, fmt.Errorf("%w: no deploy %s in the history", ErrNotFound, id)
}
