package main

// The bounds of tpcc run's settings and its stop during start-up: a setting
// that makes no run, or more connections than the host can hold, is refused
// before anything connects; a signal ends pending connects at once. No
// server is needed (these run under -short too).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"flushbench/tpcc/internal/libmariadb"
	"flushbench/tpcc/internal/report"
	"flushbench/tpcc/internal/run"
)

func TestRunSettingsBeyondTheBoundsAreRefused(t *testing.T) {
	limit, _ := run.ConnsLimit()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", fmt.Sprint(limit + 1)}, fmt.Sprintf("-c %d is more connections than this host allows", limit+1)},
		{[]string{"-c", "1000000"}, "-c 1000000 is more connections than this host allows"},
		{[]string{"-w", "100001"}, "-w 100001 is more warehouses than"},
		{[]string{"-m", "-3"}, "-m -3 / -o 0: the number of schemas and their offset are >= 0"},
		{[]string{"-o", "-1", "-m", "2"}, "the number of schemas and their offset are >= 0"},
		{[]string{"-i", "100", "-l", "60"}, "-i 100 is longer than the measurement (-l 60)"},
		{[]string{"-i", "10", "-l", "5"}, "-i 10 is longer than the measurement (-l 5)"},
		{[]string{"-l", "1000000000"}, "a phase lasts at most"},
		{[]string{"-r", "1000000000"}, "a phase lasts at most"},
		{[]string{"-3", "999999999"}, "-3 999999999: a response-time limit is 0.."},
	} {
		// A socket that does not exist: were the setting accepted, the
		// run would fail to connect instead (exit 1, another sentence).
		argv := append([]string{"run", "-d", "x", "-w", "1", "-S", "/nonexistent/mysqld.sock"}, c.args...)
		r := tpcc(t, argv...)
		if r.code != run.ExitUsage || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", c.args, r.code, r.stderr, run.ExitUsage, c.want)
		}
	}
	// The default -i (10 s) shrinks to a shorter -l: the run goes on (to
	// the missing socket).
	if r := tpcc(t, "run", "-d", "x", "-w", "1", "-l", "5", "-S", "/nonexistent/mysqld.sock"); r.code != run.ExitError || !strings.Contains(r.stderr, "cannot connect") {
		t.Errorf("-l 5 with the default -i: %d %q", r.code, r.stderr)
	}
	r := tpcc(t, "load", "-d", "x", "-w", "1", "--workers", fmt.Sprint(limit+1), "-S", "/nonexistent/mysqld.sock")
	if r.code != run.ExitUsage || !strings.Contains(r.stderr, "more connections than this host allows") {
		t.Errorf("load --workers beyond the bound: %d %q", r.code, r.stderr)
	}
}

// TestVersionSaysFormatAndClients: what flushbench's preflight reads.
func TestVersionSaysFormatAndClients(t *testing.T) {
	r := tpcc(t, "version")
	var v struct {
		Type       string   `json:"type"`
		Format     int      `json:"format"`
		Clients    []string `json:"clients"`
		Libmariadb string   `json:"libmariadb"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("tpcc version: %d %q %q (%v)", r.code, r.stdout, r.stderr, err)
	}
	if v.Type != "version" || v.Format != report.FormatVersion || len(v.Clients) == 0 || v.Clients[0] != "go" {
		t.Errorf("tpcc version: %s", r.stdout)
	}
	if has := len(v.Clients) == 2 && v.Clients[1] == "libmariadb"; has != libmariadb.Available ||
		(!has && v.Libmariadb != libmariadb.ErrNotBuilt.Error()) {
		t.Errorf("tpcc version clients %v / %q, this build has libmariadb: %v", v.Clients, v.Libmariadb, libmariadb.Available)
	}
}

// TestSignalDuringPendingConnectsStops: -c 10000 against a server that
// accepts and never answers (no greeting), SIGTERM once the first connection
// is pending: the driver is gone within the 2 s deadline, without having
// opened the other connections.
func TestSignalDuringPendingConnectsStops(t *testing.T) {
	for _, transport := range []string{"blocking", "netpoll"} {
		t.Run(transport, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			accepted := make(chan net.Conn, 16)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					accepted <- c // held open, never written to
				}
			}()
			port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
			cmd := exec.Command(os.Args[0], "run", "-h", "127.0.0.1", "-P", port, "-d", "x", "-w", "1",
				"-c", "10000", "--transport", transport)
			cmd.Env = append(os.Environ(), "TPCC_TEST_MAIN=1", "MYSQL_PWD=")
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case c := <-accepted:
				defer c.Close()
			case err := <-exited:
				t.Fatalf("tpcc ended before connecting: %v %q", err, errb.String())
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatal("tpcc never connected")
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(2 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("tpcc did not stop within 2 s of SIGTERM during its pending connects; stderr %q", errb.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != run.ExitInterrupted || !strings.Contains(errb.String(), "interrupted while connecting") {
				t.Errorf("exit code %d after SIGTERM while connecting; stderr %q", code, errb.String())
			}
			if n := len(accepted); n > 1 {
				t.Errorf("%d more connections were opened after the first never answered", n)
			}
		})
	}
}
