package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// decodeFile decodes one YAML document strictly: unknown keys are errors, so
// a misspelt option is reported instead of silently ignored.
func decodeFile(path string, out any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	err = dec.Decode(out)
	if errors.Is(err, io.EOF) {
		// yaml reports a file with no document (empty, or only comments)
		// as a bare "EOF".
		return fmt.Errorf("%s: the file is empty: expected a YAML mapping (format: pkg/node/config)", path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
