package readmetest

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// Block is one shell block of the section: the hosts it runs on, in the
// order the README gives them, and its text as written.
type Block struct {
	Hosts  []string
	Script string
	Line   int // of the opening fence, 1-based, for messages
}

// SectionBlocks returns the ```sh blocks of the README section titled
// heading (a "## " line), in order. Every one must open with a comment
// "# on HOST[, HOST …| and HOST] …" naming where it runs: a block without
// one is an error, so nothing the section shows can escape the test.
func SectionBlocks(readme, heading string) ([]Block, error) {
	var (
		blocks  []Block
		in      bool // inside the section
		fence   bool // inside a code block
		isSh    bool
		cur     strings.Builder
		start   int
		sawHead bool
	)
	sc := bufio.NewScanner(strings.NewReader(readme))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !fence && strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line[3:]) == heading
			sawHead = sawHead || in
			continue
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "```") {
			if !fence {
				fence, isSh, start = true, strings.TrimSpace(line[3:]) == "sh", n
				cur.Reset()
				continue
			}
			fence = false
			if !isSh {
				continue
			}
			b, err := parseBlock(cur.String(), start)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
			continue
		}
		if fence {
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !sawHead {
		return nil, fmt.Errorf("no section %q", heading)
	}
	if fence {
		return nil, fmt.Errorf("line %d: code block not closed", start)
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("section %q has no sh block", heading)
	}
	return blocks, nil
}

// parseBlock reads the hosts from the block's first line.
func parseBlock(text string, line int) (Block, error) {
	first, _, _ := strings.Cut(text, "\n")
	rest, ok := strings.CutPrefix(first, "# on ")
	if !ok {
		return Block{}, fmt.Errorf("README line %d: a block of the section must start with \"# on HOST …\", got %q", line+1, first)
	}
	// The host list ends at "(" or ":" (what follows is commentary).
	if i := strings.IndexAny(rest, "(:"); i >= 0 {
		rest = rest[:i]
	}
	rest = strings.TrimPrefix(strings.TrimSpace(rest), "the ")
	var hosts []string
	for _, f := range strings.FieldsFunc(rest, func(r rune) bool { return r == ',' }) {
		for _, h := range strings.Split(f, " and ") {
			h = strings.TrimSpace(h)
			if h == "" {
				continue
			}
			if strings.ContainsAny(h, " \t") {
				return Block{}, fmt.Errorf("README line %d: host %q: one word per host", line+1, h)
			}
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return Block{}, errors.New("no host")
	}
	return Block{Hosts: hosts, Script: text, Line: line}, nil
}
