package packaging

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unit is what the test takes from a systemd unit file: the [Service]
// settings it checks and runs the daemon with as systemd would.
type unit struct {
	name    string
	path    string
	typ     string   // Type=
	user    string   // User= ("" is root)
	env     []string // every Environment= assignment, in order
	envFile string   // EnvironmentFile= without its "-"
	exec    []string // ExecStart=
	caps    []string // AmbientCapabilities=, e.g. CAP_BPF
	bound   []string // CapabilityBoundingSet= (empty: no capabilities)
	noNew   bool     // NoNewPrivileges=yes
	state   string   // StateDirectory=
}

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{name: filepath.Base(path), path: path}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch k {
		case "Type":
			u.typ = v
		case "User":
			u.user = v
		case "Environment":
			u.env = append(u.env, strings.Fields(v)...) // no quoted values in our units
		case "EnvironmentFile":
			u.envFile = strings.TrimPrefix(v, "-")
		case "ExecStart":
			u.exec = strings.Fields(v)
		case "AmbientCapabilities":
			u.caps = strings.Fields(v)
		case "CapabilityBoundingSet":
			u.bound = strings.Fields(v)
		case "NoNewPrivileges":
			u.noNew = v == "yes"
		case "StateDirectory":
			u.state = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(u.exec) == 0 {
		t.Fatalf("%s: no ExecStart", path)
	}
	return u
}

// envFileVars are the variables an /etc/default file sets or shows
// commented out (#BEAMER_X=...), and the ones it sets.
func envFileVars(t *testing.T, path string) (named, set []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		commented := strings.HasPrefix(line, "#")
		k, _, ok := strings.Cut(strings.TrimPrefix(line, "#"), "=")
		if !ok || !strings.HasPrefix(k, "BEAMER_") || strings.ContainsAny(k, " \t") {
			continue
		}
		named = append(named, k)
		if !commented {
			set = append(set, strings.TrimSpace(line))
		}
	}
	return named, set
}

// setprivCaps turns CAP_BPF CAP_NET_ADMIN into setpriv's -all,+bpf,+net_admin.
func setprivCaps(caps []string) string {
	s := "-all"
	for _, c := range caps {
		s += ",+" + strings.ToLower(strings.TrimPrefix(c, "CAP_"))
	}
	return s
}
