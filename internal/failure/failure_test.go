package failure

import (
	"errors"
	"fmt"
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
