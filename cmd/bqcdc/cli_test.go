package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// envMain makes the test binary the bqcdc command, with the JSON array of
// arguments it holds (see TestMain).
const envMain = "BQCDC_TEST_MAIN"

type cliRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// bqcdc runs the command line args as bqcdc would (the test binary,
// through run) with extra environment.
func bqcdc(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), envMain+"="+string(argv)), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := cliRun{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("bqcdc %v: %v", args, err)
	}
	return r
}

// Help exits 0 with the usage on stdout; a wrong command line exits 2
// with the usage on stderr, as Go's and POSIX tools do (before: --help
// exited 1 with "flag: help requested", bqcdc --help exited 2).
func TestCLIHelpAndUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := bqcdc(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "usage: bqcdc") || r.stderr != "" {
			t.Errorf("bqcdc %v: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, r.code, r.stdout, r.stderr)
		}
	}
	for _, c := range commands {
		for _, h := range []string{"--help", "-h"} {
			r := bqcdc(t, nil, c.name, h)
			if r.code != 0 || !strings.Contains(r.stdout, "Usage of "+c.name) || r.stderr != "" {
				t.Errorf("bqcdc %s %s: exit %d, stdout %.80q, stderr %q; want 0 and the usage on stdout", c.name, h, r.code, r.stdout, r.stderr)
			}
		}
		r := bqcdc(t, nil, c.name, "--no-such-flag")
		if r.code != 2 || !strings.Contains(r.stderr, "no-such-flag") || r.stdout != "" {
			t.Errorf("bqcdc %s --no-such-flag: exit %d, stderr %.200q; want 2 naming the flag", c.name, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{}, {"nope"}, {"render", "stray"}} {
		if r := bqcdc(t, nil, args...); r.code != 2 || r.stdout != "" {
			t.Errorf("bqcdc %v: exit %d, stdout %q; want 2 and nothing on stdout", args, r.code, r.stdout)
		}
	}
}

// Every flag value is checked before credentials or network work (no
// project's credentials exist here: a check after them would fail on
// those instead), as a usage error, and a failed command prints no result
// line.
func TestCLIFlagValuesCheckedFirst(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--project", "p", "--since", "-1h"}, "--since"},
		{[]string{"replay", "--project", "p", "--stage", "nope"}, "--stage"},
		{[]string{"replay", "--project", "p", "--message-id", "a b"}, "--message-id"},
		{[]string{"replay", "--project", "p", "--message-id", ""}, "--message-id"},
		{[]string{"loadgen", "--project", "p", "--rate", "NaN"}, "rate"},
		{[]string{"loadgen", "--project", "p", "--rate", "+Inf"}, "rate"},
		{[]string{"loadgen", "--project", "p", "--messages", "1000000000000"}, "messages"},
		{[]string{"loadgen", "--project", "p", "--wait", "-1s"}, "wait"},
		{[]string{"compact", "--project", "p", "--connect-timeout", "0s"}, "--connect-timeout"},
		{[]string{"apply", "--project", "p", "--concurrency", "0"}, "--concurrency"},
	} {
		r := bqcdc(t, []string{"BQCDC_REPLAY_KEY="}, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("bqcdc %v: exit %d, stdout %q, stderr %q; want 2 naming %s and no result line", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
	if r := bqcdc(t, []string{"BQCDC_CONNECT_TIMEOUT=forever"}, "compact", "--project", "p"); r.code != 2 || !strings.Contains(r.stderr, "BQCDC_CONNECT_TIMEOUT") {
		t.Errorf("an invalid BQCDC_CONNECT_TIMEOUT: exit %d, stderr %q; want 2 naming it", r.code, r.stderr)
	}
}

// Against an endpoint that refuses connections, compact, compact
// --dry-run, replay --dry-run and status answer within the connect timeout
// with a clear error and exit 1 (before: compact retried for ever, and a
// flow refused by the parser was printed only when the process was
// killed); the refusals come first.
func TestCLIDeadEndpointFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	dir := t.TempDir()
	flows := filepath.Join(dir, "flows")
	if err := os.MkdirAll(flows, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "sql", "flows", "orders.sql"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"orders.sql": string(src), "zz_bad.sql": "CREATE FLOW bad AS AUTO CDC INTO bad FROM STREAM(`x`) KEYS (id);\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(flows, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"--project", "p", "--bigquery-endpoint", dead, "--storage-endpoint", strings.TrimPrefix(dead, "http://"),
		"--connect-timeout", "2s", "--flows", flows, "--schemas", filepath.Join("..", "..", "schemas")}
	for _, cmd := range [][]string{{"compact"}, {"compact", "--dry-run"}, {"replay", "--dry-run"}, {"status"}} {
		args := append(append([]string{}, cmd...), common...)
		r := bqcdc(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "unreachable") {
			t.Errorf("bqcdc %v: exit %d, stderr %q; want 1 saying BigQuery is unreachable", args, r.code, r.stderr)
		}
		if r.took > 15*time.Second {
			t.Errorf("bqcdc %v: answered after %s, want about the 2 s connect timeout", args, r.took)
		}
		if args[0] == "compact" {
			if i := strings.Index(r.stderr, "refused:"); i < 0 || i > strings.Index(r.stderr, "unreachable") {
				t.Errorf("bqcdc %v: the refused flow is not printed before the network failure:\n%s", args, r.stderr)
			}
		}
	}
}

// bqcdc render prints, for every flow of sql/flows, every object
// flow.Objects names (its change and state tables as the DDL of what
// apply makes, its view, its table functions), and for every materialized view
// its view and what compaction keeps of it; it reads no BigQuery.
func TestRenderPrintsTheObjects(t *testing.T) {
	root := filepath.Join("..", "..")
	r := bqcdc(t, []string{"BQCDC_PROJECT="}, "render", "--flows", filepath.Join(root, "sql", "flows"), "--schemas", filepath.Join(root, "schemas"))
	if r.code != 0 {
		t.Fatalf("bqcdc render: exit %d\n%s", r.code, r.stderr)
	}
	d, errs := flow.ParseDirAll(filepath.Join(root, "sql", "flows"))
	if len(errs) > 0 || len(d.Flows) == 0 || len(d.Golds) == 0 {
		t.Fatalf("sql/flows: %v (%d flows, %d views)", errs, len(d.Flows), len(d.Golds))
	}
	want := func(kind string, o flow.Object) {
		ds := o.Dataset
		if ds == "" {
			ds = "cdc"
		}
		if s := "CREATE OR REPLACE " + kind + " `PROJECT`.`" + ds + "`.`" + o.Name + "`"; !strings.Contains(r.stdout, s) {
			t.Errorf("render prints no %q", s)
		}
	}
	for _, f := range d.Flows {
		for _, o := range f.Objects() {
			switch {
			case o.Routine:
				want("TABLE FUNCTION", o)
			case o.What == "view":
				want("VIEW", o)
			case o.Name == catalog.StateCopyName(f): // made only while the state moves (its name is claimed)
			default: // the state and change tables, as apply makes them
				ds := o.Dataset
				if ds == "" {
					ds = "cdc"
				}
				if s := "CREATE TABLE IF NOT EXISTS `PROJECT`.`" + ds + "`.`" + o.Name + "`"; !strings.Contains(r.stdout, s) {
					t.Errorf("render prints no %q", s)
				}
			}
		}
	}
	for _, g := range d.Golds {
		objs := g.Objects()
		want("VIEW", objs[0])  // the view
		want("TABLE", objs[1]) // its state
		want("VIEW", objs[2])  // its refreshed view
	}
}
