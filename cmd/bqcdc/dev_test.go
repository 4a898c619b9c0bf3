//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/loadgen"
)

// envRunDev makes the test binary a `bqcdc` that calls runDev("local", args)
// (see TestMain), so a test can watch the exec from outside.
const envRunDev = "BQCDC_TEST_RUN_DEV"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(envMain); ok {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			panic(err)
		}
		os.Exit(run(context.Background(), argv))
	}
	if args, ok := os.LookupEnv(envRunDev); ok {
		err := runDev(context.Background(), "local", strings.Fields(args))
		fmt.Fprintln(os.Stderr, "runDev returned:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// fakeDev is a stand-in for internal/dev/cmd/bqcdc-local: it reports its
// arguments, working directory and first stdin line, then exits 5, or with
// "wait" waits for SIGTERM and exits 7.
const fakeDev = `package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	wd, _ := os.Getwd()
	fmt.Println("args:", os.Args[1:])
	fmt.Println("cwd:", wd)
	if len(os.Args) > 2 && os.Args[2] == "wait" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Println("ready")
		fmt.Println("got", <-sig)
		os.Exit(7)
	}
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Print("stdin: ", line)
	os.Exit(5)
}
`

// fakeModule writes a bqcdc module whose dev binary is fakeDev and returns
// a folder inside it (runDev looks upwards for the module).
func fakeModule(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                "module " + modulePath + " // the fake one\n\ngo 1.22\n",
		devPackage + "/main.go": fakeDev,
		"sql/flows/readme.txt":  "a folder below the root to run from\n",
	}
	for name, body := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, "sql", "flows")
}

// bqcdcCommand runs the test binary as a bqcdc calling runDev in dir. The
// dev binary goes to a cache of its own; Go's build cache stays the one in
// use (it too defaults to the user's cache).
func bqcdcCommand(t *testing.T, dir, args string) *exec.Cmd {
	t.Helper()
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envRunDev+"="+args, "GOCACHE="+strings.TrimSpace(string(gocache)), "XDG_CACHE_HOME="+t.TempDir())
	return cmd
}

// TestRunDevExecs: runDev builds the dev package of the module around the
// working directory and becomes it: the arguments, the working directory,
// stdin, stdout and the exit status are the dev binary's.
func TestRunDevExecs(t *testing.T) {
	dir := fakeModule(t)
	cmd := bqcdcCommand(t, dir, "--once -x=1")
	cmd.Stdin = strings.NewReader("hello\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 5 {
		t.Fatalf("exit: %v, want status 5 (the dev binary's); stderr:\n%s", err, stderr.String())
	}
	want := fmt.Sprintf("args: [local --once -x=1]\ncwd: %s\nstdin: hello\n", dir)
	if string(out) != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
}

// TestRunDevSignals: a SIGTERM sent to the pid that ran bqcdc reaches the
// dev binary (it is the same process), which decides how to exit.
func TestRunDevSignals(t *testing.T) {
	cmd := bqcdcCommand(t, fakeModule(t), "wait")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	ready := make(chan bool, 1)
	go func() {
		for lines.Scan() {
			if lines.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("the dev binary never got ready; stderr:\n%s", stderr.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("no dev binary after 2 minutes; stderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() || lines.Text() != "got terminated" {
		t.Errorf("after SIGTERM the dev binary printed %q, want %q", lines.Text(), "got terminated")
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Errorf("exit: %v, want status 7; stderr:\n%s", err, stderr.String())
	}
}

// TestRunDevWithoutSource: outside a bqcdc clone the error names the
// command to run instead, and nothing is built.
func TestRunDevWithoutSource(t *testing.T) {
	t.Chdir(t.TempDir())
	err := runDev(context.Background(), "local", nil)
	if err == nil || !strings.Contains(err.Error(), "go run ./cmd/bqcdc local") || !strings.Contains(err.Error(), "links the BigQuery emulator") {
		t.Errorf("runDev outside the source: %v", err)
	}
}

// TestLoadgenForwards: `bqcdc loadgen` hands the dev binary every flag it
// was given, the loadgen flags and those naming a deployment, which parse
// there (config.Target and loadgen.Command, as the dev binary registers
// them) to what they parsed to here.
func TestLoadgenForwards(t *testing.T) {
	line := []string{"--local", "--tables", "5", "--rate=12.5", "--wait", "90s", "--check",
		"--project", "p", "--dataset=d", "--prefix", "x.y", "--connect-timeout", "7s"}
	fs := flagSet("loadgen")
	if err := fs.Parse(line); err != nil {
		t.Fatal(err)
	}
	args := setFlags(fs, func(string) bool { return true })
	parse := func(args []string) (config.Target, loadgen.Command) {
		tg, c, _, err := loadgen.Parse("dev", args)
		if err != nil {
			t.Fatalf("the dev binary cannot parse %q: %v", args, err)
		}
		return tg, c
	}
	wantT, wantC := parse(line)
	gotT, gotC := parse(args)
	if !reflect.DeepEqual(gotC, wantC) || !reflect.DeepEqual(gotT, wantT) {
		t.Errorf("forwarded %q parse to %+v %+v, want %+v %+v", args, gotT, gotC, wantT, wantC)
	}
	if gotT.BigQuery.Project != "p" || gotT.Dataset != "d" || gotC.Spec.Tables != 5 {
		t.Errorf("forwarded %q lost flags: %+v %+v", args, gotT, gotC)
	}
}
