package main

import (
	"strings"

	"github.com/mythex/mythex/internal/report"
)

// checkReportPath refuses a bad --report path (exit 2) before any work.
func checkReportPath(path string) error {
	if err := report.CheckPath(path); err != nil {
		return usagef("%s", strings.TrimPrefix(err.Error(), report.ErrBadPath.Error()+": "))
	}
	return nil
}
