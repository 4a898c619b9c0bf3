package logging

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// No log line carries a URL's password, whatever logs it.
func TestLogsRedactURLPasswords(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf)
	url := "https://user:se/cr+et@registry.example.com"
	log.Info("configured "+url, "registry", url, "error", errors.New(`Get "`+url+`/schemas/ids/1": refused`),
		"list", []string{url}, "count", 3)
	out := buf.String()
	if strings.Contains(out, "cr+et") || strings.Contains(out, "user:") {
		t.Errorf("log line keeps the password: %s", out)
	}
	if !strings.Contains(out, "https://xxxxx@registry.example.com") || !strings.Contains(out, `"count":3`) || !strings.Contains(out, `"severity":"INFO"`) {
		t.Errorf("log line: %s", out)
	}
}
