package flagenv

import (
	"flag"
	"testing"
	"time"
)

type boundEdge struct {
	Timeout time.Duration `flag:"timeout" default:"10s" help:"how long"`
	Rate    int           `flag:"rate" default:"4096" help:"how fast"`
	NotMine *int          // untagged: skipped
}

type bound struct {
	Listen string  `flag:"listen" default:"127.0.0.1:8080" help:"where"`
	Token  Secret  `flag:"token" help:"the token"`
	Debug  bool    `flag:"debug" help:"more logs"`
	Ratio  float64 `flag:"ratio" default:"0.5" help:"a share"`
	Big    int64   `flag:"big" default:"9000000000" help:"a count"`
	Edge   boundEdge
}

func TestBind(t *testing.T) {
	var b bound
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if err := Bind(fs, &b); err != nil {
		t.Fatal(err)
	}
	if b.Listen != "127.0.0.1:8080" || b.Edge.Timeout != 10*time.Second || b.Edge.Rate != 4096 || b.Ratio != 0.5 || b.Big != 9e9 {
		t.Fatalf("defaults not set: %+v", b)
	}
	for _, name := range []string{"listen", "token", "debug", "ratio", "big", "timeout", "rate"} {
		if fs.Lookup(name) == nil {
			t.Errorf("--%s not registered", name)
		}
	}
	if f := fs.Lookup("timeout"); f.DefValue != "10s" || f.Usage != "how long" {
		t.Errorf("--timeout: default %q usage %q", f.DefValue, f.Usage)
	}
	if err := fs.Parse([]string{"--timeout", "1m", "--token", "s3cret-s3cret", "--rate", "-1"}); err != nil {
		t.Fatal(err)
	}
	if b.Edge.Timeout != time.Minute || b.Token.Reveal() != "s3cret-s3cret" || b.Edge.Rate != -1 {
		t.Errorf("parsed: %+v", b)
	}
}

func TestDefaults(t *testing.T) {
	e := boundEdge{Rate: -1}
	if err := Defaults(&e); err != nil {
		t.Fatal(err)
	}
	if e.Timeout != 10*time.Second || e.Rate != -1 {
		t.Errorf("%+v: want the zero timeout defaulted and the negative rate kept", e)
	}
}

func TestBindRefusesBadTags(t *testing.T) {
	for name, v := range map[string]any{
		"bad default": &struct {
			N int `flag:"n" default:"many"`
		}{},
		"unexported": &struct {
			n int `flag:"n"`
		}{},
		"unsupported": &struct {
			U uint8 `flag:"u"`
		}{},
		"not a struct": new(int),
	} {
		if err := Bind(flag.NewFlagSet("t", flag.ContinueOnError), v); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
