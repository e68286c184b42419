package settle

import (
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/usage"
)

func TestChargeOutput(t *testing.T) {
	cases := []struct {
		name                 string
		reported             int64
		wasReported          bool
		delivered, bound     int64
		want                 int64
		estimated, underflag bool
	}{
		{"honest", 100, true, 90, 1000, 100, false, false},
		{"nothing reported", 0, false, 40, 1000, 40, true, false},
		{"within tolerance", 100, true, 110, 1000, 110, true, false},
		{"under-reported", 1, true, 500, 1000, 500, true, true},
		{"tolerance is at least 2", 0, true, 2, 1000, 2, true, false},
		{"bounded", 5000, true, 10, 1000, 1000, false, false},
		{"delivered bounded", 1, true, 5000, 1000, 1000, true, true},
	}
	for _, c := range cases {
		o := ChargeOutput(c.reported, c.wasReported, c.delivered, c.bound)
		if o.Tokens != c.want || o.Estimated != c.estimated || o.Underreported != c.underflag {
			t.Errorf("%s: %+v, want %d estimated %v underreported %v", c.name, o, c.want, c.estimated, c.underflag)
		}
		var rt usage.Routing
		o.Flag(&rt, c.reported)
		if rt.OutputUnderreported != c.underflag || c.underflag && rt.ReportedOutput != c.reported {
			t.Errorf("%s: flag %+v", c.name, rt)
		}
	}
}

func TestOverBoundOutput(t *testing.T) {
	if got := OverBoundOutput(900, 100, 300); got != 300 {
		t.Errorf("reported over what the answer holds: %d, want 300", got)
	}
	if got := OverBoundOutput(200, 100, 250); got != 200 {
		t.Errorf("reported within what the answer holds: %d, want 200", got)
	}
	if got := OverBoundOutput(usage.MaxRecordTokens*2, usage.MaxRecordTokens*2, 0); got != usage.MaxRecordTokens {
		t.Errorf("over a record's most: %d", got)
	}
}

func TestPriceEmbeddingsBillInputOnly(t *testing.T) {
	m := &index.Model{}
	m.InputOrePerMillion, m.OutputOrePerMillion = 100, 1000
	out, total, in := Price(m, index.EPEmbeddings.Path(), 1_000_000, 500)
	if out != 0 || total != in || total != 1_000_000 {
		t.Errorf("embeddings: out %d total %d input %d", out, total, in)
	}
	out, total, in = Price(m, index.EPChat.Path(), 1_000_000, 1_000_000)
	if out != 1_000_000 || in != 1_000_000 || total != 11_000_000 {
		t.Errorf("chat: out %d total %d input %d", out, total, in)
	}
}
