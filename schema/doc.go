// Package schema holds the plan language's description types (an
// attribute, an output, a metric) and derives them from the config struct
// of each kind, so a kind's attributes, their types, defaults and docs are
// written once, in its struct, and one decoder (Decode) fills that struct
// for validate and for the run alike.
//
// Start with Attrs and Decode; the field tags they read are described on
// Attrs. The kinds themselves live in probes, loads and steps; plans reads
// them through this package's types.
package schema
