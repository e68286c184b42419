package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"
)

// exportHeader opens an exported YAML catalogue.
const exportHeader = "# Model catalogue exported from the control plane; load it with\n# gatewayctl catalog load FILE (configs/catalog.example.yaml documents each field).\n"

// Export writes the catalogue in the shape ParseAs reads: JSON as the admin API takes
// it, or YAML with the same fields in the same order.
func (c *Catalog) Export(f Format) ([]byte, error) {
	j, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode catalogue: %w", err)
	}
	if f == FormatJSON {
		return append(j, '\n'), nil
	}
	var doc yaml.Node // JSON read as YAML keeps the fields' order
	if err := yaml.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("encode catalogue as YAML: %w", err)
	}
	blockStyle(&doc)
	var b bytes.Buffer
	b.WriteString(exportHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode catalogue as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode catalogue as YAML: %w", err)
	}
	return b.Bytes(), nil
}

// blockStyle clears the flow and quoting styles JSON text gave the nodes, so the encoder
// writes plain block YAML and quotes only what needs quoting.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
