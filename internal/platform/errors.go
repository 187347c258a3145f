package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// Sentinel errors; platforms wrap them with %w and callers match with errors.Is.
var (
	// ErrNotFound: the app or machine does not exist (HTTP 404).
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request or config was rejected as malformed (HTTP 400/422).
	ErrInvalid = errors.New("invalid")
	// ErrConflict: the machine is in a state that does not allow the operation,
	// or someone else holds its lease (HTTP 409/412).
	ErrConflict = errors.New("conflict")
	// ErrRateLimited: the control plane refused the request for now (HTTP 429).
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: the control plane failed or could not be reached (HTTP
	// 5xx, connection errors).
	ErrUnavailable = errors.New("control plane unavailable")
	// ErrTimeout: the control plane did not answer in time, or a Wait ran out.
	ErrTimeout = errors.New("timed out")
	// ErrUnauthorized: the token was missing or refused (HTTP 401/403).
	ErrUnauthorized = errors.New("unauthorized")
)

// IsControlPlane reports whether err is the control plane failing to answer —
// rate limits, timeouts, 5xx, network errors — rather than a statement about
// the app or the machine. A gate must never roll back on such errors alone.
func IsControlPlane(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrRateLimited) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// ErrImageNotFound: the release's image does not exist where the platform
// looks for it (local: no such executable, or not executable; docker: not on
// the host; fly: the registry has no such image). It wraps ErrInvalid too: bad
// input, nothing changed.
var ErrImageNotFound = fmt.Errorf("%w: image not found", ErrInvalid)

// ImageChecker is a platform that can tell, before any machine changes,
// whether an image exists. A gate calls it first; a platform without it is
// trusted to refuse a bad image on create or update.
type ImageChecker interface {
	// CheckImage returns an error wrapping ErrImageNotFound when image does
	// not exist (or cannot run), a control-plane error when the platform
	// could not be asked, and nil when it exists.
	CheckImage(ctx context.Context, image string) error
}

// ErrLeaseHeld: someone else (flyctl, Fly itself, another deploy) holds the
// machine's lease, so a write was refused (Fly: 409 "lease currently held
// by ..."). Transient: wait, then say unknown — never a statement about the
// app. Matches ErrConflict too.
var ErrLeaseHeld = fmt.Errorf("%w: lease held by someone else", ErrConflict)

// ErrIncompleteConfig: the platform could not give the machine's full config
// (Fly: host_status not "ok", only incomplete_config). An update built from
// it would drop guest size, mounts or checks, so none is sent. It matches
// ErrUnavailable (a control-plane error): the verdict is unknown.
var ErrIncompleteConfig = fmt.Errorf("%w: the platform could not give the machine's config", ErrUnavailable)

// Leaser is a platform whose writes to a machine are fenced by a lease (Fly
// Machines: POST/DELETE .../lease, the nonce sent on every write in the
// fly-machine-lease-nonce header).
type Leaser interface {
	// AcquireLease takes machine id's lease for ttl; this client's later
	// writes to it carry the lease. An error matching ErrLeaseHeld says
	// someone else holds it. Acquiring a lease already held by this client
	// refreshes it.
	AcquireLease(ctx context.Context, app, id string, ttl time.Duration) error
	// ReleaseLease gives the lease back; releasing one not held is not an
	// error.
	ReleaseLease(ctx context.Context, app, id string) error
}
