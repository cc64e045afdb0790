// Package docblock keeps generated text inside hand-written documents: a
// block stands between a line "<!-- NAME:begin -->" and a line
// "<!-- NAME:end -->" (the markers scripts/ops-figures.sh uses), so a
// simulation's figures are written by code from its raw output and a test
// can tell when a document no longer says what the data says.
package docblock

import (
	"fmt"
	"os"
	"strings"
)

func markers(name string) (begin, end string) {
	return "<!-- " + name + ":begin -->\n", "<!-- " + name + ":end -->\n"
}

// find returns the offsets of block name's content in doc.
func find(doc, name string) (from, to int, err error) {
	begin, end := markers(name)
	i := strings.Index(doc, begin)
	if i < 0 || (i > 0 && doc[i-1] != '\n') {
		return 0, 0, fmt.Errorf("no line %q", strings.TrimSpace(begin))
	}
	from = i + len(begin)
	j := strings.Index(doc[from:], end)
	if j < 0 || (j > 0 && doc[from+j-1] != '\n') {
		return 0, 0, fmt.Errorf("no line %q after %q", strings.TrimSpace(end), strings.TrimSpace(begin))
	}
	if strings.Contains(doc[from+j+len(end):], begin) {
		return 0, 0, fmt.Errorf("block %q appears twice", name)
	}
	return from, from + j, nil
}

// Get returns the content of block name in doc.
func Get(doc, name string) (string, error) {
	from, to, err := find(doc, name)
	if err != nil {
		return "", err
	}
	return doc[from:to], nil
}

// Set returns doc with block name's content replaced by block (a newline
// is added when block does not end with one).
func Set(doc, name, block string) (string, error) {
	from, to, err := find(doc, name)
	if err != nil {
		return "", err
	}
	if block != "" && !strings.HasSuffix(block, "\n") {
		block += "\n"
	}
	return doc[:from] + block + doc[to:], nil
}

// Sync compares the blocks of the file at path with want (name → content).
// With update it rewrites the file when they differ and returns nil;
// without, it returns an error naming every block that differs.
func Sync(path string, want map[string]string, update bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	var stale []string
	for name, block := range want {
		if !strings.HasSuffix(block, "\n") {
			block += "\n"
		}
		got, err := Get(doc, name)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if got == block {
			continue
		}
		if !update {
			stale = append(stale, fmt.Sprintf("block %q:\n--- in the document\n%s--- from the data\n%s", name, got, block))
			continue
		}
		if doc, err = Set(doc, name, block); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("%s is not what its data says (regenerate: scripts/sim-doc.sh, or go test -run TestDocFigures -args -update):\n%s",
			path, strings.Join(stale, "\n"))
	}
	if update && doc != string(b) {
		return os.WriteFile(path, []byte(doc), 0o644)
	}
	return nil
}
