package main

import (
	"os"
	"testing"

	"github.com/mythex/mythex/internal/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}
