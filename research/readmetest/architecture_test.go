package readmetest

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/beamer-lb/beamer/"

// goList is `go list -f FORMAT PATTERNS...` run at the repository's root,
// one line per package.
func goList(t *testing.T, format string, patterns ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", format}, patterns...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", patterns, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestProductNeverImportsResearch holds the one rule between the two wings
// (docs/architecture.md): no product package, tests aside, depends on a
// package of the research wing.
func TestProductNeverImportsResearch(t *testing.T) {
	for _, line := range goList(t, `{{.ImportPath}}|{{join .Deps " "}}`, "./pkg/...", "./cmd/beamer") {
		pkg, deps, _ := strings.Cut(line, "|")
		for _, d := range strings.Fields(deps) {
			if strings.HasPrefix(d, module+"research/") {
				t.Errorf("%s depends on %s: the product must not import the research wing", strings.TrimPrefix(pkg, module), strings.TrimPrefix(d, module))
			}
		}
	}
}

// TestArchitectureMapNamesEveryPackage fails when a Go package is missing
// from docs/architecture.md: by its path in backquotes, or, for a package
// inside another one, by its name in backquotes beside its parent's path.
func TestArchitectureMapNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	pkgs := goList(t, "{{.ImportPath}}", "./pkg/...", "./cmd/...", "./research/...")
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: the patterns are wrong", len(pkgs))
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p, module)
		if strings.Contains(doc, "`"+rel+"`") {
			continue
		}
		if strings.Contains(doc, "`"+path.Dir(rel)+"`") && strings.Contains(doc, "`"+path.Base(rel)+"`") {
			continue
		}
		t.Errorf("docs/architecture.md does not name %s", rel)
	}
}

// TestBPFMapNamesEveryFile fails when a C file of bpf/ is missing from
// bpf/README.md's file map (by its path below bpf/, or its name in a
// section of its folder).
func TestBPFMapNamesEveryFile(t *testing.T) {
	b, err := os.ReadFile("../../bpf/README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var files []string
	for _, pattern := range []string{"*.c", "*/*.c", "*/*.h"} {
		m, err := filepath.Glob(filepath.Join("../../bpf", pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 40 {
		t.Fatalf("found %d C files under bpf/: the patterns are wrong", len(files))
	}
	for _, f := range files {
		rel := strings.TrimPrefix(f, "../../bpf/")
		dir, name := path.Split(rel)
		if strings.Contains(doc, "`"+rel+"`") || (dir != "" && strings.Contains(doc, "## "+dir) && strings.Contains(doc, "`"+name+"`")) {
			continue
		}
		t.Errorf("bpf/README.md does not name %s", rel)
	}
}
