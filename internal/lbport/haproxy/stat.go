package haproxy

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/mythex/mythex/internal/lbport"
)

// ServerStat is one server's row of `show stat` (HAProxy's CSV statistics,
// "management guide" §9.1), the columns the driver reads.
type ServerStat struct {
	// Backend is pxname, Server svname.
	Backend, Server string
	// Qcur is the requests queued for the server, Scur its current sessions.
	Qcur, Scur int
	// Status is the server's status: "UP", "DOWN", "UP 1/3" (going down),
	// "DOWN 1/2" (going up), "NOLB", "MAINT", "MAINT (via b/s)", "DRAIN",
	// "no check".
	Status string
	// CheckStatus is the last health check's status: "L7OK", "L7STS" (bad
	// HTTP code), "L4CON" (connection refused), "L4TOUT"/"L7TOUT" (timeout),
	// "INI" (not yet run); empty when the server has no check. A leading
	// "* " (check in progress) is stripped.
	CheckStatus string
	// CheckDesc is HAProxy's words for CheckStatus.
	CheckDesc string
	// CheckRise and CheckFall are the server's rise and fall; -1 when the
	// server has no check (HAProxy leaves the columns empty).
	CheckRise, CheckFall int
	// Addr is the server's address (host:port); empty on HAProxy before 1.9.
	Addr string
}

// statColumns are the columns ParseStat needs; HAProxy has always had them
// in `show stat`'s header since 2.0.
var statColumns = []string{"pxname", "svname", "qcur", "scur", "status", "check_status"}

// ParseStat parses the CSV answer of `show stat` and returns the server rows
// (not FRONTEND/BACKEND) of backend, or of every backend when backend is "".
// Columns are found by the header's names, so HAProxy versions that add
// columns parse alike.
func ParseStat(answer, backend string) ([]ServerStat, error) {
	answer = strings.TrimPrefix(strings.TrimLeft(answer, "\n"), "# ")
	r := csv.NewReader(strings.NewReader(answer))
	r.FieldsPerRecord = -1
	r.ReuseRecord = false
	rows, err := r.ReadAll()
	if err != nil {
		return nil, &lbport.UnexpectedError{Op: "haproxy show stat", Detail: "not CSV: " + err.Error()}
	}
	if len(rows) == 0 {
		return nil, &lbport.UnexpectedError{Op: "haproxy show stat", Detail: "empty answer"}
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, c := range statColumns {
		if _, ok := col[c]; !ok {
			return nil, &lbport.UnexpectedError{Op: "haproxy show stat", Detail: fmt.Sprintf("no %q column in the header (HAProxy older than 2.0?)", c)}
		}
	}
	get := func(row []string, name string) string {
		i, ok := col[name]
		if !ok || i >= len(row) {
			return ""
		}
		return row[i]
	}
	num := func(row []string, name string) int {
		n, err := strconv.Atoi(get(row, name))
		if err != nil {
			return -1
		}
		return n
	}
	var out []ServerStat
	for _, row := range rows[1:] {
		px, sv := get(row, "pxname"), get(row, "svname")
		if sv == "FRONTEND" || sv == "BACKEND" || (backend != "" && px != backend) {
			continue
		}
		s := ServerStat{
			Backend: px, Server: sv,
			Qcur: max(num(row, "qcur"), 0), Scur: max(num(row, "scur"), 0),
			Status:      get(row, "status"),
			CheckStatus: strings.TrimPrefix(get(row, "check_status"), "* "),
			CheckDesc:   get(row, "check_desc"),
			CheckRise:   num(row, "check_rise"), CheckFall: num(row, "check_fall"),
			Addr: get(row, "addr"),
		}
		out = append(out, s)
	}
	return out, nil
}

// HasCheck reports whether the server has an active health check (the
// `check` keyword): HAProxy reports the status "no check" otherwise.
func (s ServerStat) HasCheck() bool { return !strings.EqualFold(s.Status, "no check") }
