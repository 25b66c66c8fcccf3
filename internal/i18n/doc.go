// Package i18n is the lab's one mechanism for texts in Japanese and
// English: a Lang, a Text that holds both languages, a Catalog of Texts by
// key with {name} placeholders, and a Msg (a key plus its arguments) that a
// producer sends so the reader picks the language.
//
// The page's strings (web), the exercise files (exercises) and the flow's
// evidence (lab/flow/evidence) all use it, so "is every text in both
// languages, with the same placeholders?" is one check (Catalog.Check,
// Text.Complete) instead of three.
//
// Japanese comes first everywhere: the chapter the lab teaches is Japanese.
package i18n
