package nodeauth

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// CertScript is where scripts/store-certs.sh is: the repository's, found
// from the working directory up (tests, `make demo`), else the one the
// Debian package installs.
func CertScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "store-certs.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			break
		}
		dir = up
	}
	const installed = "/usr/share/beamer/store-certs.sh"
	if _, err := os.Stat(installed); err == nil {
		return installed, nil
	}
	return "", errors.New("scripts/store-certs.sh not found (from the working directory up, nor " + installed + ")")
}

// Issue runs scripts/store-certs.sh in dir: the same certificates an
// operator makes (the lab and the tests use it, so the script is what they
// test). storeAddr names the store's server certificate; ids are
// NAME[=ROLE[@ADDR,...]] as the script takes them.
func Issue(dir, storeAddr string, ids ...string) error {
	script, err := CertScript()
	if err != nil {
		return err
	}
	cmd := exec.Command("bash", append([]string{script, storeAddr}, ids...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", script, err, out)
	}
	return nil
}

// FilesIn names NAME.pem, NAME-key.pem and ca.pem in dir.
func FilesIn(dir, name string) Files {
	return Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
}
