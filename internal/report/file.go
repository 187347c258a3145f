package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mythex/mythex/internal/atomicfile"
	"github.com/mythex/mythex/internal/deployrec"
)

// ErrBadPath is matched (errors.Is) by CheckPath's errors.
var ErrBadPath = errors.New("bad report path")

// CheckPath refuses a report path before any work starts: it must name an
// .html file in a directory that exists, and not be a directory itself. ""
// (no report) is fine. Errors wrap ErrBadPath and say the fix.
func CheckPath(path string) error {
	if path == "" {
		return nil
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".html" && ext != ".htm" {
		return fmt.Errorf("%w: --report %q: give a file name ending in .html, e.g. --report deploy.html", ErrBadPath, path)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%w: --report %q is a directory: give a file name, e.g. --report %s", ErrBadPath, path, filepath.Join(path, "deploy.html"))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: --report %q: directory %s does not exist; create it or give another path", ErrBadPath, path, dir)
	}
	return nil
}

// WriteFile draws rec (Write) into path atomically (a reader never sees half
// a file) and says where it went on progress (nil: nowhere).
func WriteFile(path string, rec deployrec.Recording, progress io.Writer) error {
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		return err
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "report: %s (%d KB) — open it in a browser; it makes no network request\n", path, (buf.Len()+1023)/1024)
	}
	return nil
}
