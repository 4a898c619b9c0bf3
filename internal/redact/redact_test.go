package redact

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@host:8081/path":  "https://user:xxxxx@host:8081/path",
		"https://user@host":                   "https://user@host",
		"https://host/x":                      "https://host/x",
		"http://u:p%40ss@h":                   "http://u:xxxxx@h",
		"":                                    "",
		"https://user:se cret@host":           "https://user:xxxxx@host",
		"registry at https://a:b@c and d:e@f": "registry at https://a:xxxxx@c and d:e@f",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		`Get "https://user:secret@registry.example.com/schemas/ids/1": dial tcp: refused`: `Get "https://user:xxxxx@registry.example.com/schemas/ids/1": dial tcp: refused`,
		"two: http://a:b@x/ and https://c:d@e@y/z":                                        "two: http://a:xxxxx@x/ and https://c:xxxxx@y/z",
		"no url: user:secret@host":                                                        "no url: user:secret@host",
		"mailto style https://host/a@b":                                                   "mailto style https://host/a@b",
		"plain":                                                                           "plain",
	} {
		got := Text(in)
		if got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, "secret") && !strings.Contains(want, "secret") {
			t.Errorf("Text(%q) keeps the secret", in)
		}
	}
}

func TestError(t *testing.T) {
	base := fmt.Errorf("fetching https://u:secret@h/x: %w", io.ErrUnexpectedEOF)
	err := Error(base)
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "u:xxxxx@h") {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("the wrapped error is lost")
	}
	if clean := errors.New("clean"); Error(clean) != clean || Error(nil) != nil {
		t.Error("a clean error should come back as it is")
	}
}
