package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// history matches words that tell how the work went or name tracker issues, which belong in
// commit messages and the tracker, not in documents, comments or flag help.
var history = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bissues? #?\d+`),
	regexp.MustCompile(`(?i)\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|previous|earlier|later|last) (work )?(session|round)s?\b`),
	regexp.MustCompile(`(?i)\bsession's (runs?|end|figures|work|profiles?)\b`),
	regexp.MustCompile(`(?i)\b(this|the) session (made|found|measured|changed)\b`),
}

// scanned is what a reader of the project reads: documents, code and its comments, flag
// help, scripts and deployment files.
func scanned(path string) bool {
	switch filepath.Ext(path) {
	case ".go", ".md", ".yaml", ".yml", ".sh", ".env", ".service", ".Containerfile", ".example":
		return true
	}
	base := filepath.Base(path)
	return base == "Makefile" || strings.HasSuffix(base, ".Containerfile") || strings.HasPrefix(base, "run")
}

func TestNoHistoryWords(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".data", "bin", "bench-results", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !scanned(path) || strings.HasSuffix(path, "words_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			for _, re := range history {
				if m := re.FindString(sc.Text()); m != "" {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d: %q: say what the code does, not how the work went or which issue asked for it", rel, n, m)
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
