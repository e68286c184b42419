package relay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
)

// TestDrainEvents: each protocol's drain event is one event whose data is JSON naming
// not_ready.
func TestDrainEvents(t *testing.T) {
	for _, e := range []index.Endpoint{index.EPChat, index.EPCompletions, index.EPMessages, index.EPResponses} {
		ev := string(drainEvent(e))
		if !strings.HasSuffix(ev, "\n\n") || strings.Count(ev, "\n\n") != 1 {
			t.Errorf("%v: not one event: %q", e, ev)
		}
		_, data, ok := strings.Cut(ev, "data: ")
		var v any
		if !ok || json.Unmarshal([]byte(strings.TrimSpace(data)), &v) != nil || !strings.Contains(data, "not_ready") {
			t.Errorf("%v: data is not JSON naming not_ready: %q", e, ev)
		}
	}
}
