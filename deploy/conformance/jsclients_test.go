package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/deploy/tools/proc"
)

// The JavaScript clients customers call the gateway with, run by node against the stack:
// the scripts in js/ (package.json pins their versions, package-lock.json the tree) print
// one JSON line each, which the tests assert on.

var (
	npmOnce sync.Once
	npmErr  error
)

// jsDir returns the client project's directory, installing its packages (npm ci) once
// when they are missing.
func jsDir(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy", "conformance", "js")
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir, cmd.Env = dir, proc.ChildEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
		}
	})
	if npmErr != nil {
		t.Fatal(npmErr)
	}
	return dir
}

// runNode runs a client script against the stack with the account's key and decodes the
// JSON line it prints into out.
func runNode(t *testing.T, s *Stack, key, script string, out any) {
	t.Helper()
	dir := jsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = append(proc.ChildEnv(), "GATEWAY_BASE_URL="+s.DataURL+"/v1", "GATEWAY_API_KEY="+key,
		"MODEL_CHAT="+modelChat, "MODEL_REASONING="+modelReasoning)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s%s", script, err, stdout.Bytes(), stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("node %s printed %q: %v\n%s", script, stdout.Bytes(), err, stderr.Bytes())
	}
}

func TestEndpoints_Chat_StructuredOutputJSClients(t *testing.T) {
	t.Parallel()
	s, a := sharedAccount(t)
	t.Run("ai-sdk generateObject", func(t *testing.T) {
		var got struct {
			Object struct {
				Name        string `json:"name"`
				Servings    int    `json:"servings"`
				Vegetarian  *bool  `json:"vegetarian"`
				Course      string `json:"course"`
				Ingredients []struct {
					Item  string   `json:"item"`
					Grams *float64 `json:"grams"`
				} `json:"ingredients"`
				Steps []string `json:"steps"`
			} `json:"object"`
			FinishReason string `json:"finishReason"`
			OutputTokens int    `json:"outputTokens"`
		}
		runNode(t, s, a.Key, "ai-sdk-object.mjs", &got)
		o := got.Object
		if o.Name == "" || o.Servings < 1 || o.Servings > 12 || o.Vegetarian == nil || o.Course == "" ||
			len(o.Ingredients) == 0 || o.Ingredients[0].Grams == nil || len(o.Steps) < 2 {
			t.Errorf("object %+v", o)
		}
		if got.FinishReason != "stop" || got.OutputTokens <= 0 {
			t.Errorf("finish %q output tokens %d", got.FinishReason, got.OutputTokens)
		}
	})
	t.Run("langchain withStructuredOutput", func(t *testing.T) {
		var got struct {
			Object struct {
				City       string   `json:"city"`
				Population *int     `json:"population"`
				Landmarks  []string `json:"landmarks"`
				Coastal    *bool    `json:"coastal"`
			} `json:"object"`
		}
		runNode(t, s, a.Key, "langchain-structured.mjs", &got)
		if o := got.Object; o.City == "" || o.Population == nil || len(o.Landmarks) == 0 || o.Coastal == nil {
			t.Errorf("object %+v", o)
		}
	})
}

func TestEndpoints_Responses_ReasoningStreamHelperJS(t *testing.T) {
	t.Parallel()
	s, a := sharedAccount(t)
	var got struct {
		Status       string   `json:"status"`
		OutputText   string   `json:"outputText"`
		SnapshotText string   `json:"snapshotText"`
		Reasoning    string   `json:"reasoning"`
		ItemTypes    []string `json:"itemTypes"`
		Events       []string `json:"events"`
	}
	runNode(t, s, a.Key, "responses-stream.mjs", &got)
	if got.Status != "completed" || got.OutputText == "" || got.SnapshotText != got.OutputText {
		t.Errorf("status %q text %q (snapshot %q)", got.Status, got.OutputText, got.SnapshotText)
	}
	if got.Reasoning == "" || strings.Join(got.ItemTypes, ",") != "reasoning,message" {
		t.Errorf("reasoning %q items %v", got.Reasoning, got.ItemTypes)
	}
	if !contains(got.Events, "response.reasoning_text.delta") || got.Events[len(got.Events)-1] != "response.completed" {
		t.Errorf("events %v", got.Events)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
