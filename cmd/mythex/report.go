package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mythex/mythex/internal/atomicfile"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/report"
)

// checkReportPath refuses a --report path before any work starts: it must
// name an .html file in a directory that exists, and not a directory itself.
func checkReportPath(path string) error {
	if path == "" {
		return nil
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".html" && ext != ".htm" {
		return usagef("--report %q: give a file name ending in .html, e.g. --report deploy.html", path)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usagef("--report %q is a directory: give a file name, e.g. --report %s", path, filepath.Join(path, "deploy.html"))
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return usagef("--report %q: directory %s does not exist; create it or give another path", path, dir)
	}
	return nil
}

// writeReport renders rec to path atomically (a reader never sees half a
// file) and says where it went on progress.
func writeReport(path string, rec deployrec.Recording, progress io.Writer) error {
	var buf bytes.Buffer
	if err := report.Write(&buf, rec); err != nil {
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
