package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	compactfn "github.com/bqcdc/bqcdc/functions/compact"
	ingestfn "github.com/bqcdc/bqcdc/functions/ingest"
	"github.com/bqcdc/bqcdc/internal/config"
)

// buildpackMain is what the Cloud Run functions Go buildpack generates: a
// main package that imports the package at the root of the uploaded source
// (whose init registers the functions) and starts the Functions Framework,
// which serves the function named by FUNCTION_TARGET.
const buildpackMain = `package main

import (
	"log"
	"os"

	_ "github.com/bqcdc/bqcdc"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
)

func main() {
	if err := funcframework.StartHostPort("127.0.0.1", os.Getenv("PORT")); err != nil {
		log.Fatal(err)
	}
}
`

// TestDeployedFunctionsBuildAndServe builds the repository root the way the
// buildpack does, starts the binary once per entry point (as Cloud Run
// does, with the function's environment), and exercises each the way
// production calls it: Pub/Sub push (a plain push body, converted to a
// CloudEvent by the Functions Framework) for Ingest, Cloud Scheduler's POST
// for Compact.
func TestDeployedFunctionsBuildAndServe(t *testing.T) {
	dir, err := os.MkdirTemp("../../..", "zz_buildpack_main_")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(buildpackMain), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "function")
	build := exec.Command("go", "build", "-o", bin, "./"+filepath.Base(dir))
	build.Dir = "../../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the buildpack main: %v\n%s", err, out)
	}

	flowsDir, err := filepath.Abs("testdata/flows")
	if err != nil {
		t.Fatal(err)
	}
	start := func(target string) string {
		port := freeTCPPort(t)
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "FUNCTION_TARGET="+target, "PORT="+strconv.Itoa(port),
			config.EnvProject+"="+stack.Project, config.EnvDataset+"="+stack.Dataset,
			config.EnvBigQueryEndpoint+"="+stack.BigQueryURL, config.EnvStorageEndpoint+"="+stack.StorageAddr,
			config.EnvRegistryURL+"="+stack.RegistryURL, config.EnvVisibilityLag+"=1s", config.EnvIngestTimeout+"=1s", config.EnvPubSubEmulator+"="+stack.PubSubAddr,
			config.EnvFlowsDir+"="+flowsDir) // the test stack's flows, not the demo's built in
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("%s function output:\n%s", target, logs.String())
			}
		})
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		for deadline := time.Now().Add(20 * time.Second); ; {
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				return url
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not listen within 20 s:\n%s", target, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Ingest, as a Pub/Sub push subscription delivers: a plain push body.
	ingestURL := start(ingestfn.EntryPoint)
	id, schema, _ := itemsSchema(t)
	data := encode(t, schema, id, pgEnvelope("c", 777_000, nil, itemRow(777, "SKU-PUSH", "7.000")))
	body, _ := json.Marshal(map[string]any{
		"message": map[string]any{"data": base64.StdEncoding.EncodeToString(data), "messageId": "push-777",
			"publishTime": time.Now().UTC().Format(time.RFC3339Nano), "attributes": map[string]string{"via": "push"}},
		"subscription": "projects/" + stack.Project + "/subscriptions/items-push",
	})
	var status int
	var answer []byte
	for attempt := 0; attempt < 20; attempt++ { // the emulator may answer "database is locked"
		resp, err := http.Post(ingestURL+"/projects/"+stack.Project+"/topics/"+items, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if status = resp.StatusCode; status/100 == 2 { // what Pub/Sub takes as an acknowledgement
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status/100 != 2 {
		t.Fatalf("push delivery answered %d: %s", status, answer)
	}
	rows := query(t, "SELECT sku, _cdc_op FROM `cdc.test_shop_items_changelog` WHERE _cdc_message_id = 'push-777'")
	if len(rows) != 1 || rows[0]["sku"] != "SKU-PUSH" || rows[0]["_cdc_op"] != "c" {
		t.Fatalf("pushed message landed as %v", rows)
	}

	// Compact, as Cloud Scheduler calls it, for one flow by name.
	compactURL := start(compactfn.EntryPoint)
	resp, err := http.Post(compactURL+"/?flow=items_current", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out compactfn.Response
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(out.Reports) != 1 || out.Reports[0].Flow != "items_current" || out.Reports[0].Outcome == "failed" {
		t.Fatalf("compact answered %d: %+v", resp.StatusCode, out)
	}
	resp2, err := http.Post(compactURL+"/", "application/json", strings.NewReader(`{"flows": ["no_such_flow"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown flow name answered %d, want 400", resp2.StatusCode)
	}
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
