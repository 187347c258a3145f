// Command testapp is the local platform tests' machine: it serves /healthz on
// $MYTHEX_APP_LISTEN, and crashes or exits as told by its environment:
//
//	TESTAPP_CRASH_AFTER  exit this long after start (Go duration; empty: never)
//	TESTAPP_EXIT_CODE    the exit code then (default 1)
//	TESTAPP_IGNORE_TERM  ignore SIGTERM (only SIGKILL stops it); else SIGTERM exits 143
//	TESTAPP_ARGS_FILE    write os.Args (one per line) to this file at start
//	TESTAPP_CRASH_SIGNAL at TESTAPP_CRASH_AFTER, kill itself with this signal number instead
//	TESTAPP_HEALTH_STATUS /healthz answers this HTTP status (default 200)
//	TESTAPP_BOOT         boot this long before answering /healthz as told
//	TESTAPP_BOOT_STATUS  during TESTAPP_BOOT, answer this status (else refuse connections)
package main

import (
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if f := os.Getenv("TESTAPP_ARGS_FILE"); f != "" {
		_ = os.WriteFile(f, []byte(strings.Join(os.Args, "\n")), 0o644)
	}
	if os.Getenv("TESTAPP_IGNORE_TERM") != "" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		// Exit on SIGTERM even as PID 1 in a container (where a signal
		// without a handler is ignored), with the shell convention 128+15.
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() { <-term; os.Exit(143) }()
	}
	if d, err := time.ParseDuration(os.Getenv("TESTAPP_CRASH_AFTER")); err == nil {
		code, _ := strconv.Atoi(os.Getenv("TESTAPP_EXIT_CODE"))
		if os.Getenv("TESTAPP_EXIT_CODE") == "" {
			code = 1
		}
		sig, _ := strconv.Atoi(os.Getenv("TESTAPP_CRASH_SIGNAL"))
		time.AfterFunc(d, func() {
			if sig > 0 {
				_ = syscall.Kill(os.Getpid(), syscall.Signal(sig))
				select {}
			}
			os.Exit(code)
		})
	}
	started := time.Now()
	boot, _ := time.ParseDuration(os.Getenv("TESTAPP_BOOT"))
	bootStatus, _ := strconv.Atoi(os.Getenv("TESTAPP_BOOT_STATUS"))
	status, _ := strconv.Atoi(os.Getenv("TESTAPP_HEALTH_STATUS"))
	if status == 0 {
		status = http.StatusOK
	}
	if bootStatus == 0 {
		time.Sleep(boot) // refuse connections while booting
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if time.Since(started) < boot {
			w.WriteHeader(bootStatus)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte("ok " + os.Getenv("MYTHEX_MACHINE_ID")))
	})
	if err := http.ListenAndServe(os.Getenv("MYTHEX_APP_LISTEN"), nil); err != nil {
		os.Exit(3)
	}
}
