package failure

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestClassification(t *testing.T) {
	base := errors.New("boom")
	p := fmt.Errorf("handling message 7: %w", Permanent(StageWire, base))
	r := Retryable(StageAppend, base)
	if !IsPermanent(p) || IsPermanent(r) || IsPermanent(base) {
		t.Errorf("IsPermanent: permanent=%v retryable=%v plain=%v", IsPermanent(p), IsPermanent(r), IsPermanent(base))
	}
	if StageOf(p) != StageWire || StageOf(r) != StageAppend || StageOf(base) != "" {
		t.Errorf("StageOf = %q %q %q", StageOf(p), StageOf(r), StageOf(base))
	}
	if !errors.Is(p, base) || p.Error() != "handling message 7: wire: boom" {
		t.Errorf("wrapping lost: %v", p)
	}
	if Permanent(StageWire, nil) != nil || Retryable(StageWire, nil) != nil {
		t.Error("nil error wrapped")
	}
}

func TestRecovered(t *testing.T) {
	err := func() (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = Recovered(v)
			}
		}()
		var m map[string]int
		m["x"] = 1 // panics
		return nil
	}()
	if !IsPermanent(err) || StageOf(err) != StageInternal || !strings.Contains(err.Error(), "assignment to entry in nil map") {
		t.Errorf("err = %v", err)
	}
	var re runtime.Error
	if !errors.As(err, &re) {
		t.Error("the runtime error is not wrapped")
	}
	if err := Recovered("boom"); err.Error() != "internal: panic: boom" {
		t.Errorf("err = %v", err)
	}
}
