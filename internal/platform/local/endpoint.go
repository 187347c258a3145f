package local

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mythex/mythex/internal/atomicfile"
	"github.com/mythex/mythex/internal/auth"
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
