package process

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The test binary doubles as the service the tests run (re-exec-ed with
// childArg first) and as an exec healthcheck (checkArg). It is configured by
// its environment, which the runtime sets from the definition, so every test
// also checks that the definition's environment arrives.
const (
	childArg = "mythex-test-child"
	checkArg = "mythex-test-check"
)

// childReport is what the child writes to $CHILD_REPORT at start.
type childReport struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	PID  int      `json:"pid"`
	PGID int      `json:"pgid"`
	FD3  bool     `json:"fd3"`
}

func envDur(k string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(k))
	return d
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

// childMain is a small service: it can listen with a health path, ignore
// SIGTERM, exit on its own, write a lot of output, tick, and fork a
// grandchild into its process group.
func childMain(args []string) int {
	if os.Getenv("CHILD_ROLE") == "grandchild" {
		signal.Ignore(syscall.SIGTERM)
		os.WriteFile(os.Getenv("CHILD_GRANDCHILD_PID"), []byte(strconv.Itoa(os.Getpid())), 0o600)
		time.Sleep(time.Hour)
		return 0
	}
	if path := os.Getenv("CHILD_REPORT"); path != "" {
		dir, _ := os.Getwd()
		pgid, _ := syscall.Getpgid(0)
		_, fd3err := os.Stat("/proc/self/fd/3")
		b, _ := json.Marshal(childReport{Args: args, Env: os.Environ(), Dir: dir, PID: os.Getpid(), PGID: pgid, FD3: fd3err == nil})
		if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
			return 10
		}
		os.Rename(path+".tmp", path)
	}
	terms := make(chan os.Signal, 1)
	if os.Getenv("CHILD_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(terms, syscall.SIGTERM)
	}
	if pidFile := os.Getenv("CHILD_GRANDCHILD_PID"); pidFile != "" {
		self, _ := os.Executable()
		gc := exec.Command(self, childArg)
		gc.Env = append(os.Environ(), "CHILD_ROLE=grandchild")
		if err := gc.Start(); err != nil {
			return 11
		}
	}
	if n := envInt("CHILD_LOG_BYTES", 0); n > 0 {
		line := strings.Repeat("x", 99) + "\n"
		for written := 0; written < n; written += len(line) {
			os.Stdout.WriteString(line)
		}
	}
	if addr := os.Getenv("CHILD_LISTEN"); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "listen:", err)
			return 12
		}
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := os.Stat(os.Getenv("CHILD_UNHEALTHY_FILE")); err == nil {
				http.Error(w, "draining", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		}))
	}
	fmt.Println("child ready", os.Getenv("MYTHEX_VERSION"))
	var tick <-chan time.Time
	if d := envDur("CHILD_TICK"); d > 0 {
		tick = time.NewTicker(d).C
	}
	var exit <-chan time.Time
	if d := envDur("CHILD_EXIT_AFTER"); d > 0 {
		exit = time.After(d)
	}
	for i := 0; ; i++ {
		select {
		case <-tick:
			fmt.Println("tick", i)
		case <-exit:
			fmt.Println("exiting on my own")
			return envInt("CHILD_EXIT_CODE", 0)
		case <-terms:
			fmt.Println("got SIGTERM")
			time.Sleep(envDur("CHILD_TERM_DELAY"))
			return envInt("CHILD_TERM_CODE", 0)
		}
	}
}

// checkMain is an exec healthcheck: exit 0 when $CHECK_URL answers 200 (or,
// with CHECK_SLEEP, after sleeping that long).
func checkMain() int {
	if d := envDur("CHECK_SLEEP"); d > 0 {
		time.Sleep(d)
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(os.Getenv("CHECK_URL"))
	if err != nil {
		fmt.Println("check:", err)
		return 1
	}
	resp.Body.Close()
	fmt.Println("check status", resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}
