// Package deploy is the root of the deploy module; its test keeps the module's build list
// in step with the gateway's.
package deploy

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
)

type module struct {
	Path, Version string
	Replace       *struct{ Dir string }
}

// buildList returns the modules `go list -m all` selects in dir, by path.
func buildList(t *testing.T, dir string) map[string]module {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-json", "all")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all in %s: %v", dir, err)
	}
	mods := map[string]module{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m module
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		mods[m.Path] = m
	}
	return mods
}

// required returns the modules the go.mod in dir lists, with their versions.
func required(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var f struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	req := map[string]string{}
	for _, r := range f.Require {
		req[r.Path] = r.Version
	}
	return req
}

// TestSameVersionsAsGateway: every module the gateway's go.mod lists (all that provide a
// package its binaries or tests build) is selected here at the same version, so this
// module's tests run the gateway's code on the dependencies its binaries link (fasthttp
// stays where the gateway pins it); and the gateway is the checkout itself.
func TestSameVersionsAsGateway(t *testing.T) {
	gw := required(t, "..")
	here := buildList(t, ".")
	if len(gw) < 10 {
		t.Fatalf("the gateway's go.mod lists %d modules", len(gw))
	}
	for path, v := range gw {
		switch h, ok := here[path]; {
		case !ok:
			t.Errorf("%s %s: not in this module's build list", path, v)
		case h.Version != v:
			t.Errorf("%s: %s here, %s in the gateway's go.mod", path, h.Version, v)
		}
	}
	if g := here["github.com/sekgate/gateway"]; g.Replace == nil || g.Replace.Dir == "" {
		t.Errorf("github.com/sekgate/gateway is not replaced by the checkout: %+v", g)
	}
}
