// Package docs holds lockstep's documentation: the language reference
// (language.md, its tables generated from plans.Language()), the cookbook
// and the CI recipe. Its tests keep them true: every part of the schema is
// documented and nothing gone is, the defaults match the runner, and every
// plan in the docs validates.
package docs

//go:generate go run ./gen -doc language.md
