package beamercli

import (
	"fmt"
	"os"
	"strings"
)

// cheetahKeysEnv gives Cheetah keys through the environment (KEY0,KEY1
// [,CURRENT]) where a file is not practical: the environment of a process
// is readable by its owner only, its command line by everyone (ps).
const cheetahKeysEnv = "BEAMER_CHEETAH_KEYS"

// readSecretFile reads a file holding a secret, refusing one that others
// than its owner may read (group or world bits set) or that is not a
// regular file: a key another user could read is a key they can use.
func readSecretFile(flag, path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flag, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("--%s %s: not a regular file", flag, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("--%s %s: mode %04o lets others read a secret: chmod 600 %s", flag, path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flag, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// cheetahKeysText is the keys' text from --FLAG FILE or, without it, from
// BEAMER_CHEETAH_KEYS; "" when neither is given.
func cheetahKeysText(flag, file string) (string, error) {
	if file != "" {
		return readSecretFile(flag, file)
	}
	return strings.TrimSpace(os.Getenv(cheetahKeysEnv)), nil
}
