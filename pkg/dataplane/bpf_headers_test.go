package dataplane

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The C sources stand alone (issue 24): every #include is at the top of its
// file, before any code; the include graph has no circle; and every header
// compiles by itself, so none calls a function that only its includer
// defines. scripts/include-graph.sh prints the same graph as DOT.

const bpfDir = "../../bpf"

var includeLine = regexp.MustCompile(`^\s*#\s*include\s+"([^"]+)"`)

// bpfIncludes reads one C file: the local files it includes (paths relative
// to bpf/) and the includes that come after its first line of code.
func bpfIncludes(rel string) (deps []string, late []string, err error) {
	f, err := os.Open(filepath.Join(bpfDir, rel))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inComment, code := false, false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if m := includeLine.FindStringSubmatch(line); m != nil && !inComment {
			dep := filepath.ToSlash(filepath.Join(filepath.Dir(rel), m[1]))
			deps = append(deps, dep)
			if code {
				late = append(late, fmt.Sprintf("%s:%d includes %s after code", rel, n, m[1]))
			}
			continue
		}
		for line != "" {
			switch {
			case inComment:
				end := strings.Index(line, "*/")
				if end < 0 {
					line = ""
				} else {
					inComment, line = false, strings.TrimSpace(line[end+2:])
				}
			case strings.HasPrefix(line, "/*"):
				inComment, line = true, line[2:]
			case strings.HasPrefix(line, "//"), strings.HasPrefix(line, "#"):
				line = "" // comments and the preprocessor (guards, conditions, defines)
			default:
				code, line = true, ""
			}
		}
	}
	return deps, late, sc.Err()
}

// bpfSources lists bpf/'s C files, relative to bpf/.
func bpfSources(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(bpfDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(p); !d.IsDir() && (ext == ".c" || ext == ".h") {
			rel, _ := filepath.Rel(bpfDir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

func TestBPFIncludesAtTopWithoutCircle(t *testing.T) {
	graph := map[string][]string{}
	for _, f := range bpfSources(t) {
		deps, late, err := bpfIncludes(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range late {
			t.Error(l)
		}
		graph[f] = deps
	}
	if len(graph) < 10 {
		t.Fatalf("found %d C files under %s: wrong directory?", len(graph), bpfDir)
	}
	// Depth-first search; a file met again while on the path closes a circle.
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(string)
	visit = func(f string) {
		switch state[f] {
		case onPath:
			i := slices.Index(path, f)
			t.Errorf("include circle: %s -> %s", strings.Join(path[i:], " -> "), f)
			return
		case done:
			return
		}
		state[f] = onPath
		path = append(path, f)
		for _, d := range graph[f] {
			if _, ok := graph[d]; !ok {
				t.Errorf("%s includes %s, which is not under bpf/", f, d)
				continue
			}
			visit(d)
		}
		path = path[:len(path)-1]
		state[f] = done
	}
	for _, f := range slices.Sorted(mapKeys(graph)) {
		visit(f)
	}
}

func mapKeys(m map[string][]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestBPFHeadersSelfContained compiles each header alone, as the programs
// are compiled (bpf2go's flags in generate.go): a header that uses what it
// does not include, or calls back into its includer, fails here.
func TestBPFHeadersSelfContained(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("clang not found (make setup installs it)")
		}
		t.Skip("clang not found: the headers are not compiled alone (make setup installs it)")
	}
	abs, err := filepath.Abs(bpfDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range bpfSources(t) {
		if filepath.Ext(f) != ".h" {
			continue
		}
		for _, bench := range []bool{false, true} {
			args := []string{"-target", "bpf", "-mcpu=v3", "-O2", "-Wall", "-Werror",
				"-I/usr/include/x86_64-linux-gnu", "-fsyntax-only", "-x", "c", "-"}
			if bench {
				args = append([]string{"-DBEAMER_BENCH"}, args...)
			}
			cmd := exec.Command(clang, args...)
			cmd.Stdin = strings.NewReader(fmt.Sprintf("#include %q\n", filepath.Join(abs, f)))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s (bench build %v) does not compile alone: %v\n%s", f, bench, err, out)
			}
		}
	}
}
