package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/mythex/mythex/internal/atomicfile"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/platform/fly"
)

// Files the daemon (`mythex publish local-platform`) keeps in its state dir.
const (
	// InfoFile holds the daemon's Endpoint as JSON while it serves.
	InfoFile = "local-platform.json"
	// TokenFile holds the API's bearer token (mode 0600).
	TokenFile = "local-platform.token"
	// MachinesDir is the supervisor's own state dir (machines, their logs).
	MachinesDir = "local-platform"
)

// Endpoint is where the daemon's API serves and how to authenticate to it:
// the daemon writes it into the state dir (WriteEndpoint), `mythex publish`
// reads it there (ReadEndpoint).
type Endpoint struct {
	URL       string `json:"url"`
	TokenFile string `json:"token_file"`
	PID       int    `json:"pid"`
	// Token is the bearer token read from TokenFile (never written in
	// InfoFile).
	Token string `json:"-"`
}

// ReadEndpoint reads the serving daemon's endpoint and its token from
// stateDir. It fails when no daemon announced itself there (InfoFile
// missing), or when InfoFile or the token file cannot be read.
func ReadEndpoint(stateDir string) (Endpoint, error) {
	var e Endpoint
	b, err := os.ReadFile(filepath.Join(stateDir, InfoFile))
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("%s: %w", InfoFile, err)
	}
	tok, err := auth.LoadToken(e.TokenFile, "")
	if err != nil {
		return e, err
	}
	e.Token = tok
	return e, nil
}

// NewToken returns a fresh random API token (24 bytes, hex).
func NewToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// WriteToken writes token into stateDir's TokenFile atomically (mode 0600)
// and returns the file's absolute path.
func WriteToken(stateDir, token string) (string, error) {
	path, err := filepath.Abs(filepath.Join(stateDir, TokenFile))
	if err != nil {
		return "", err
	}
	return path, atomicfile.Write(path, []byte(token+"\n"), 0o600)
}

// WriteEndpoint announces a serving daemon in stateDir (InfoFile, written
// atomically); remove takes the announcement back when the daemon stops.
func WriteEndpoint(stateDir string, e Endpoint) (remove func(), err error) {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir, InfoFile)
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return nil, err
	}
	return func() { _ = os.Remove(path) }, nil
}

// Serve runs the daemon's API: it writes a fresh token into stateDir,
// listens on listen (loopback), serves handler(token) (the Machines API over
// the supervisor), announces the endpoint in stateDir (WriteEndpoint), tells
// started where it serves, and serves until ctx ends; then it takes the
// announcement back and shuts the API down. Errors: the token or the
// announcement cannot be written, the address cannot be bound, the server
// fails.
func Serve(ctx context.Context, stateDir, listen string, handler func(token string) http.Handler, started func(Endpoint)) error {
	token, err := NewToken()
	if err != nil {
		return err
	}
	tokenPath, err := WriteToken(stateDir, token)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	srv := &http.Server{Handler: handler(token), ReadHeaderTimeout: 10 * time.Second}
	info := Endpoint{URL: "http://" + l.Addr().String(), TokenFile: tokenPath, PID: os.Getpid()}
	unannounce, err := WriteEndpoint(stateDir, info)
	if err != nil {
		l.Close()
		return err
	}
	defer unannounce()
	started(info)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// ErrNotRunning is Dial's error when no daemon announced itself in the state
// dir (or its token cannot be read).
var ErrNotRunning = errors.New("the local platform is not running")

// Dial returns a Machines API client of the daemon serving stateDir: at api
// when given (its token still read from stateDir), else at the announced
// endpoint. The daemon runs on this host (loopback only), so a release's
// image is an executable here, checked (CheckImage) before any machine
// changes. Errors: ErrNotRunning (wrapped, naming the state dir and why).
func Dial(stateDir, api string) (*fly.Client, error) {
	ep, err := ReadEndpoint(stateDir)
	if err != nil {
		return nil, fmt.Errorf("%w for state dir %s (%v)", ErrNotRunning, stateDir, err)
	}
	if api == "" {
		api = ep.URL
	}
	return fly.New(fly.Options{BaseURL: api, Token: ep.Token, PrivateAddresses: true, Name: "local", Retries: 1,
		CheckImage: func(_ context.Context, image string) error { return CheckImage(image) }})
}
