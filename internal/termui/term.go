package termui

import (
	"io"
	"os"
	"sync"

	"github.com/mattn/go-isatty"
)

// IsTerminal reports whether w is a terminal (a character device, or a
// Cygwin/MSYS pty): the one test every command uses to choose between
// in-place progress for people and plain lines for logs and pipes.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Color reports whether w should get ANSI colour: it is a terminal, NO_COLOR
// is unset (no-color.org) and TERM is not "dumb".
func Color(w io.Writer) bool {
	return IsTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// Serialized returns w itself when it is a file (the OS orders writes, and
// a child process given it inherits it: a terminal stays a terminal), else w
// behind a mutex, for writers that several goroutines share (a timeline and
// a command's output).
func Serialized(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return Locked(w)
}

// Locked returns w behind a mutex: every Write is whole, whichever goroutine
// makes it.
func Locked(w io.Writer) io.Writer { return &lockedWriter{w: w} }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
