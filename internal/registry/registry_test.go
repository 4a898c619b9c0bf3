package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Credentials in the registry URL are used as basic auth and never appear
// in an error.
func TestCredentialsInURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "secret" {
			http.Error(w, `{"error_code":40101,"message":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/schemas/ids/1":
			w.Write([]byte(`{"schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}"}`))
		default:
			http.Error(w, `{"error_code":40403,"message":"Schema not found"}`, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	withCreds := strings.Replace(srv.URL, "http://", "http://user:secret@", 1)
	c := New(withCreds, Options{})
	ctx := context.Background()
	if _, err := c.Schema(ctx, 1); err != nil {
		t.Fatalf("schema 1: %v", err)
	}
	_, err := c.Schema(ctx, 2)
	if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "secret") {
		t.Errorf("schema 2: %v", err)
	}
	// A registry that cannot be reached: the transport error quotes the URL.
	down := New("http://user:secret@127.0.0.1:1", Options{Timeout: time.Second})
	_, err = down.Schema(ctx, 1)
	if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "secret") {
		t.Errorf("unreachable registry: %v", err)
	}
}

// A password holding '/' and '+' (as base64 secrets do) never appears in an
// error: percent-encoded as a URL must hold it, or raw, as a URL that does
// not parse (configuration refuses those; the client still masks them).
func TestPasswordWithSlashNotInErrors(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"http://user:se%2Fcr%2Bet@127.0.0.1:1", "http://user:se/cr+et@127.0.0.1:1", "http://ke/y:se/cr+et@127.0.0.1:1/x"} {
		_, err := New(url, Options{Timeout: time.Second}).Schema(ctx, 1)
		if err == nil || strings.Contains(err.Error(), "cr+et") || strings.Contains(err.Error(), "cr%2Bet") || strings.Contains(err.Error(), "user") {
			t.Errorf("%s: error %v, want one without the credentials", url, err)
		}
	}
}

func TestSplitCredentials(t *testing.T) {
	for in, want := range map[string][3]string{
		"https://u:p@h:8081/x": {"https://h:8081/x", "u", "p"},
		"https://h":            {"https://h", "", ""},
		"https://u@h":          {"https://h", "u", ""},
	} {
		clean, u, p := splitCredentials(in)
		if got := [3]string{clean, u, p}; got != want {
			t.Errorf("splitCredentials(%q) = %q, want %q", in, got, want)
		}
	}
}
