//! An embedded, protocol-faithful Kubernetes API server for tests and demos.
