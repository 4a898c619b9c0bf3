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
		"https://user:secret@host:8081/path":  "https://xxxxx@host:8081/path",
		"https://apikey@host":                 "https://xxxxx@host",
		"https://host/x":                      "https://host/x",
		"http://u:p%40ss@h":                   "http://xxxxx@h",
		"":                                    "",
		"https://user:se cret@host":           "https://xxxxx@host",
		"registry at https://a:b@c and d:e@f": "registry at https://xxxxx@c and d:e@f",
		// A password with a raw '/' or '?' ends the authority early: the
		// rest is masked up to the last '@' all the same.
		"https://user:ab/c+d=@host/x":      "https://xxxxx@host/x",
		"https://user:1234/ss@host":        "https://xxxxx@host",
		"https://user:p?w#x@host":          "https://xxxxx@host",
		"https://us+er:p+a@ss:w@host:1/x":  "https://xxxxx@host:1/x",
		"https://user:p%2Fa%2Bss@host/sub": "https://xxxxx@host/sub",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		`Get "https://user:secret@registry.example.com/schemas/ids/1": dial tcp: refused`: `Get "https://xxxxx@registry.example.com/schemas/ids/1": dial tcp: refused`,
		"two: http://a:b@x/ and https://c:d@e@y/z":                                        "two: http://xxxxx@x/ and https://xxxxx@y/z",
		`Get "https://user:se/cr+et@host/subjects": refused`:                              `Get "https://xxxxx@host/subjects": refused`,
		"no url: user:secret@host":                                                        "no url: user:secret@host",
		"plain":                                                                           "plain",
		// An '@' in a path masks the host with it: more than needed, never less.
		"mailto style https://host/a@b": "mailto style https://xxxxx@b",
	} {
		got := Text(in)
		if got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		for _, secret := range []string{"secret", "se/cr+et", "cr+et"} {
			if strings.Contains(got, secret) && !strings.Contains(want, secret) {
				t.Errorf("Text(%q) keeps %q", in, secret)
			}
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://registry.example.com", true},
		{"http://127.0.0.1:8081/sub", true},
		{"https://user:p%2Fa%2Bss%40x@host", true},
		{"https://user:p+ss@host", true},
		{"https://user:ab/c+d=@host", false},  // raw '/': host "user:ab", bad port
		{"https://user:1234/ss@host", false},  // raw '/': host "user:1234", path "/ss@host"
		{"https://user:12?ss@host", false},    // raw '?': the query holds the rest
		{"https://user:12#ss@host", false},    // raw '#'
		{"https://user:se cret@host", false},  // a space
		{"registry.example.com:8081", false},  // no scheme
		{"ftp://user:secret@host", false},     // not http
		{"https://", false},                   // no host
		{"https://user:s\necret@host", false}, // a newline
	} {
		err := CheckURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
		_, rest, _ := strings.Cut(tc.url, "://")
		if err != nil && (!errors.Is(err, ErrBadURL) || rest != "" && strings.Contains(err.Error(), rest) || strings.Contains(err.Error(), "user:")) {
			t.Errorf("CheckURL(%q) = %q: want ErrBadURL, not quoting the URL", tc.url, err)
		}
	}
}

func TestError(t *testing.T) {
	base := fmt.Errorf("fetching https://u:secret@h/x: %w", io.ErrUnexpectedEOF)
	err := Error(base)
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "https://xxxxx@h") {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("the wrapped error is lost")
	}
	if clean := errors.New("clean"); Error(clean) != clean || Error(nil) != nil {
		t.Error("a clean error should come back as it is")
	}
}
