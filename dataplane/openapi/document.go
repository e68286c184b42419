package openapi

// CompileDocument compiles another OpenAPI 3.1 document (JSON) with the same validator,
// e.g. the control plane's admin document in its tests.
func CompileDocument(raw []byte) (*Spec, error) { return compile(raw) }
