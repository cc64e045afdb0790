package nodeauth

import (
	"strings"
	"testing"
)

// A plaintext node API is refused off loopback unless --insecure.
func TestCheckPlaintext(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9300": true, "[::1]:9300": true, "localhost:9300": true,
		"198.18.0.10:9300": false, ":9300": false, "0.0.0.0:9300": false, "[2001:db8::1]:9300": false,
	} {
		err := CheckPlaintext("agent API", addr, false)
		if (err == nil) != ok {
			t.Errorf("%s: %v, want allowed=%v", addr, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--insecure") {
			t.Errorf("%s: %v does not say how", addr, err)
		}
		if err := CheckPlaintext("agent API", addr, true); err != nil {
			t.Errorf("%s with --insecure: %v", addr, err)
		}
	}
}

// The identities store-certs.sh issues carry their role; a process refuses
// a certificate of another role than its own, and one without a role.
func TestIssuedRoles(t *testing.T) {
	dir := t.TempDir()
	if err := Issue(dir, "127.0.0.1", "ctl=controller", "mux1=mux@127.0.0.1", "agent1=agent@127.0.0.1,::1", "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := ServerConfig(FilesIn(dir, "agent1"), RoleAgent); err != nil {
		t.Errorf("agent identity as agent: %v", err)
	}
	if _, err := ServerConfig(FilesIn(dir, "mux1"), RoleMux); err != nil {
		t.Errorf("mux identity as mux: %v", err)
	}
	if _, err := ClientConfig(FilesIn(dir, "ctl")); err != nil {
		t.Errorf("controller identity: %v", err)
	}
	if _, err := ServerConfig(FilesIn(dir, "mux1"), RoleAgent); err == nil || !strings.Contains(err.Error(), `role "mux"`) {
		t.Errorf("mux identity as agent: %v", err)
	}
	if _, err := ClientConfig(FilesIn(dir, "agent1")); err == nil {
		t.Error("an agent identity accepted as the controller's")
	}
	if _, err := ClientConfig(FilesIn(dir, "plain")); err == nil || !strings.Contains(err.Error(), "names no role") {
		t.Errorf("a certificate without a role: %v", err)
	}
	if _, err := ServerConfig(Files{Cert: FilesIn(dir, "agent1").Cert}, RoleAgent); err == nil {
		t.Error("a certificate without key and CA accepted")
	}
	if err := Issue(dir, "127.0.0.1", "m=mux"); err == nil || !strings.Contains(err.Error(), "name its address") {
		t.Errorf("a mux identity without an address: %v", err)
	}
}
