package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/mythex/mythex/internal/platform"
)

// CheckImage reports whether image (an executable's path on this platform)
// exists and may be executed: an error wrapping platform.ErrImageNotFound
// names what is wrong. The supervisor would otherwise start a machine that
// exits 127 at every boot.
func CheckImage(image string) error {
	if image == "" {
		return fmt.Errorf("%w: image is empty; give an executable's path", platform.ErrImageNotFound)
	}
	path, err := exec.LookPath(image)
	if err != nil {
		return fmt.Errorf("%w: %s: no executable file at that path (%v)", platform.ErrImageNotFound, image, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", platform.ErrImageNotFound, image, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: %s: not an executable file (mode %s)", platform.ErrImageNotFound, image, st.Mode())
	}
	return nil
}

// CheckImage implements platform.ImageChecker.
func (s *Supervisor) CheckImage(_ context.Context, image string) error { return CheckImage(image) }

var _ platform.ImageChecker = (*Supervisor)(nil)
