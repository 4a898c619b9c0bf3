// Package logging configures structured JSON logs in the shape Cloud Logging
// reads from Cloud Run: "severity" and "message" fields.
package logging

import (
	"io"
	"log/slog"
)

// New returns a JSON logger writing to w.
func New(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.LevelKey:
				a.Key = "severity"
				if l, ok := a.Value.Any().(slog.Level); ok && l == slog.LevelWarn {
					a.Value = slog.StringValue("WARNING")
				}
			case slog.MessageKey:
				a.Key = "message"
			case slog.TimeKey:
				a.Key = "time"
			}
			return a
		},
	}))
}
