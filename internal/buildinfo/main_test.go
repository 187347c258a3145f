package buildinfo

import (
	"testing"

	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
