package definition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/mythex/mythex/internal/atomicfile"
)

// Errors of the Store; compare with errors.Is.
var (
	// ErrNotFound: no definition is stored under the ref asked for (nothing
	// published yet, no previous, nothing marked good).
	ErrNotFound = errors.New("no definition")
	// ErrNotCurrent: MarkGood was given a hash that is not the current
	// definition's; only what is running now can be verified good.
	ErrNotCurrent = errors.New("not the current definition")
	// ErrNotSealed: a definition was published whose Hash does not match its
	// content (never sealed, or changed after sealing).
	ErrNotSealed = errors.New("definition not sealed")
	// ErrCorrupt: a stored file does not match its hash or does not decode.
	ErrCorrupt = errors.New("definition store corrupt")
)

// Ref names one of the store's three definitions.
type Ref string

// The refs a Store keeps.
const (
	// RefCurrent is the definition the host should run.
	RefCurrent Ref = "current"
	// RefPrevious is the definition the host ran before current; Rollback
	// restores it.
	RefPrevious Ref = "previous"
	// RefLastGood is the last definition verified on this host (MarkGood): the
	// one to return to when neither current nor previous can be trusted.
	RefLastGood Ref = "last_good"
)

// Refs are the hashes the three refs point at; "" when unset.
type Refs struct {
	// Current is the hash of the current definition.
	Current string `json:"current,omitempty"`
	// Previous is the hash of the previous definition.
	Previous string `json:"previous,omitempty"`
	// LastGood is the hash of the last known good definition.
	LastGood string `json:"last_good,omitempty"`
	// Verified is the hash of the last definition that started on this host
	// with every service running its spec and answering its health check
	// (MarkVerified). Unlike LastGood it says nothing about the fleet.
	// Cleared when it is none of the three above.
	Verified string `json:"verified,omitempty"`
	// Pending is the hash of a definition a deploy published
	// (PublishPending) that has not started whole on this host yet: while it
	// is current, the host is half deployed. MarkVerified of it clears it,
	// and so does any change that makes another definition current.
	Pending string `json:"pending,omitempty"`
}

// HalfDeployed reports whether the current definition was published by a
// deploy and never started whole here (Pending is current).
func (r Refs) HalfDeployed() bool {
	return r.Current != "" && r.Pending == r.Current
}

func (r Refs) get(ref Ref) string {
	switch ref {
	case RefCurrent:
		return r.Current
	case RefPrevious:
		return r.Previous
	case RefLastGood:
		return r.LastGood
	}
	return ""
}

const refsFile = "refs.json"

var blobRE = regexp.MustCompile(`^[0-9a-f]{64}\.json$`)

// Store keeps a host's current, previous and last known good definitions in
// a directory of the host's state:
//
//	<dir>/refs.json       {"current": <hash>, "previous": <hash>, "last_good": <hash>}
//	<dir>/<hash>.json     the canonical encoding of one definition, immutable
//
// Definitions are content-addressed and written once; every change of the
// refs is one atomic write of refs.json (temp file, fsync, rename, fsync of the
// directory), so a crash leaves either the old three refs or the new three,
// never a mix, and never loses the working version. Files no ref points at are
// removed after each change. What was published is what is read back, byte
// for byte (Bytes).
//
// The host agent owns the Store and is the only writer of these files: the
// watchdog, the runtimes and operators read them and never write them. One
// Store per directory; its methods are safe for concurrent use.
type Store struct {
	dir string
	mu  sync.Mutex
}

// OpenStore opens (creating it 0700 if needed) the store in dir and checks
// that what is there is readable. Errors: os errors wrapped; ErrCorrupt when
// refs.json or a file it points at is damaged.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("definition store: %w", err)
	}
	s := &Store{dir: dir}
	refs, err := s.readRefs()
	if err != nil {
		return nil, err
	}
	for _, ref := range []Ref{RefCurrent, RefPrevious, RefLastGood} {
		if h := refs.get(ref); h != "" {
			if _, err := s.readBlob(h); err != nil {
				return nil, fmt.Errorf("definition store: %s: %w", ref, err)
			}
		}
	}
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Publish makes d the current definition and the current one the previous.
// Publishing the current definition again (same hash) changes nothing and
// returns false; otherwise it returns true. Publishing the previous
// definition swaps the two, so nothing is lost. The last known good is never
// changed. d must be sealed (ErrNotSealed) and valid (ErrInvalid).
func (s *Store) Publish(d *Definition) (changed bool, err error) {
	return s.publish(d, false)
}

// PublishPending is Publish for a deploy: in the same atomic change it
// records d as pending (Refs.Pending) until MarkVerified says it started
// whole, so that a deploy that dies in between leaves a host known to be
// half deployed. Publishing the current definition again changes nothing.
func (s *Store) PublishPending(d *Definition) (changed bool, err error) {
	return s.publish(d, true)
}

func (s *Store) publish(d *Definition, pending bool) (changed bool, err error) {
	b, err := sealedBytes(d)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	refs, err := s.readRefs()
	if err != nil {
		return false, err
	}
	if refs.Current == d.Hash {
		return false, nil
	}
	if err := s.writeBlob(d.Hash, b); err != nil {
		return false, err
	}
	next := refs
	next.Previous, next.Current = refs.Current, d.Hash
	if pending {
		next.Pending = d.Hash
	}
	return true, s.commit(next)
}

// Rollback makes the previous definition current again and the current one
// previous (a swap: the version being rolled back from is kept, and a later
// Rollback returns to it), and returns the restored definition, byte for byte
// what was published. ErrNotFound when there is no previous definition. To go
// back to the last known good instead, Publish(LastGood()).
func (s *Store) Rollback() (*Definition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	refs, err := s.readRefs()
	if err != nil {
		return nil, err
	}
	if refs.Previous == "" {
		return nil, fmt.Errorf("definition store: rollback: %w previous", ErrNotFound)
	}
	d, err := s.readBlob(refs.Previous)
	if err != nil {
		return nil, err
	}
	next := refs
	next.Current, next.Previous = refs.Previous, refs.Current
	if err := s.commit(next); err != nil {
		return nil, err
	}
	return d, nil
}

// MarkGood records the current definition, which must have hash hash, as the
// last known good: the deploy calls it once every service of the host is
// verified. ErrNotCurrent when hash is not the current definition's;
// ErrNotFound when nothing is published. Marking again is a no-op.
func (s *Store) MarkGood(hash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	refs, err := s.readRefs()
	if err != nil {
		return err
	}
	if refs.Current == "" {
		return fmt.Errorf("definition store: mark good: %w current", ErrNotFound)
	}
	if refs.Current != hash {
		return fmt.Errorf("definition store: mark good %.12s: current is %.12s: %w", hash, refs.Current, ErrNotCurrent)
	}
	if refs.LastGood == hash {
		return nil
	}
	next := refs
	next.LastGood = hash
	return s.commit(next)
}

// MarkVerified records that the current definition, which must have hash
// hash, started on this host and every service of it answered its health
// check. ErrNotCurrent when hash is not the current definition's; ErrNotFound
// when nothing is published. Marking again is a no-op.
func (s *Store) MarkVerified(hash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	refs, err := s.readRefs()
	if err != nil {
		return err
	}
	if refs.Current == "" {
		return fmt.Errorf("definition store: mark verified: %w current", ErrNotFound)
	}
	if refs.Current != hash {
		return fmt.Errorf("definition store: mark verified %.12s: current is %.12s: %w", hash, refs.Current, ErrNotCurrent)
	}
	if refs.Verified == hash && refs.Pending != hash {
		return nil
	}
	next := refs
	next.Verified, next.Pending = hash, ""
	return s.commit(next)
}

// Current returns the current definition; ErrNotFound when none.
func (s *Store) Current() (*Definition, error) { return s.Get(RefCurrent) }

// Previous returns the previous definition; ErrNotFound when none.
func (s *Store) Previous() (*Definition, error) { return s.Get(RefPrevious) }

// LastGood returns the last known good definition; ErrNotFound when none.
func (s *Store) LastGood() (*Definition, error) { return s.Get(RefLastGood) }

// Get returns the definition ref points at; ErrNotFound when none, ErrCorrupt
// when its file is damaged.
func (s *Store) Get(ref Ref) (*Definition, error) {
	b, err := s.Bytes(ref)
	if err != nil {
		return nil, err
	}
	return decodeStored(b)
}

// Bytes returns the stored encoding of the definition ref points at, exactly
// as published. Errors as for Get.
func (s *Store) Bytes(ref Ref) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	refs, err := s.readRefs()
	if err != nil {
		return nil, err
	}
	h := refs.get(ref)
	if h == "" {
		return nil, fmt.Errorf("definition store: %w %s", ErrNotFound, ref)
	}
	return s.readBlobBytes(h)
}

// Refs returns the hashes the three refs point at.
func (s *Store) Refs() (Refs, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readRefs()
}

func sealedBytes(d *Definition) ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	b, err := d.Encode()
	if err != nil {
		return nil, err
	}
	if d.Hash == "" || hashOf(b) != d.Hash {
		return nil, fmt.Errorf("definition store: publish: hash %q does not match the content: %w; call Seal after building or changing a definition", d.Hash, ErrNotSealed)
	}
	return b, nil
}

func (s *Store) readRefs() (Refs, error) {
	var refs Refs
	b, err := os.ReadFile(filepath.Join(s.dir, refsFile))
	if errors.Is(err, os.ErrNotExist) {
		return refs, nil
	}
	if err != nil {
		return refs, fmt.Errorf("definition store: %w", err)
	}
	if err := strictUnmarshal(b, &refs); err != nil {
		return refs, fmt.Errorf("definition store: %s: %v: %w", refsFile, err, ErrCorrupt)
	}
	for _, h := range []string{refs.Current, refs.Previous, refs.LastGood, refs.Verified, refs.Pending} {
		if h != "" && !blobRE.MatchString(h+".json") {
			return refs, fmt.Errorf("definition store: %s: bad hash %q: %w", refsFile, h, ErrCorrupt)
		}
	}
	return refs, nil
}

// commit writes refs atomically, then removes files no ref points at.
func (s *Store) commit(refs Refs) error {
	if refs.Verified != refs.Current && refs.Verified != refs.Previous && refs.Verified != refs.LastGood {
		refs.Verified = ""
	}
	if refs.Pending != refs.Current {
		refs.Pending = ""
	}
	b, err := json.Marshal(refs)
	if err != nil {
		return fmt.Errorf("definition store: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(s.dir, refsFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("definition store: %w", err)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("definition store: %w", err)
	}
	keep := map[string]bool{refs.Current: true, refs.Previous: true, refs.LastGood: true}
	for _, e := range entries {
		if !blobRE.MatchString(e.Name()) || keep[strings.TrimSuffix(e.Name(), ".json")] {
			continue
		}
		if err := atomicfile.Remove(filepath.Join(s.dir, e.Name())); err != nil {
			return fmt.Errorf("definition store: %w", err)
		}
	}
	return nil
}

func (s *Store) blobPath(hash string) string { return filepath.Join(s.dir, hash+".json") }

func (s *Store) writeBlob(hash string, b []byte) error {
	if old, err := os.ReadFile(s.blobPath(hash)); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := atomicfile.Write(s.blobPath(hash), b, 0o600); err != nil {
		return fmt.Errorf("definition store: %w", err)
	}
	return nil
}

func (s *Store) readBlobBytes(hash string) ([]byte, error) {
	b, err := os.ReadFile(s.blobPath(hash))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("definition store: %s.json is missing: %w", hash, ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("definition store: %w", err)
	}
	if hashOf(b) != hash {
		return nil, fmt.Errorf("definition store: %s.json does not match its hash: %w", hash, ErrCorrupt)
	}
	return b, nil
}

func (s *Store) readBlob(hash string) (*Definition, error) {
	b, err := s.readBlobBytes(hash)
	if err != nil {
		return nil, err
	}
	return decodeStored(b)
}

func decodeStored(b []byte) (*Definition, error) {
	d, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("definition store: %v: %w", err, ErrCorrupt)
	}
	if hashOf(b) != d.Hash {
		return nil, fmt.Errorf("definition store: stored definition is not in canonical form: %w", ErrCorrupt)
	}
	return d, nil
}
