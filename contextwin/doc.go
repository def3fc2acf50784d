// Package contextwin builds the context window a Task's agent receives: the
// state's effective input, cut down to the Task's Context block
// (states.ContextConfig) so that it fits MaxTokens.
//
// # Size
//
// Sizes are jsonpath.EstimateTokens, the engine's one token estimate: a
// quarter of the characters (runes) of the compact JSON text of the content
// (of the string itself when the content is a string), rounded up. The
// content fits when its estimate is at most MaxTokens. MaxTokens 0 means no
// limit: nothing is dropped to fit, and only Exclude, a Summarize with When
// "Always" (or Strategy "summarize") and the picking of Strategy "semantic"
// change the content.
//
// # Paths
//
// Every path of the block (Exclude, Include, Priority, Candidates,
// Summarize.Target) is
// evaluated against the input as Build receives it, before anything is
// removed, and must be rooted at "$". Indexes therefore always refer to the
// input: Include "$.messages[-1]" is the input's last message, and Dropped
// reports the input's indexes. A path that selects nothing is not an error.
//
// # Steps
//
// Build works in this order:
//
//  1. Exclude: every location an Exclude path selects is removed, whatever
//     it is. Exclude wins over Include: an excluded location is gone even if
//     an Include path selects it or something inside it. Excluding "$"
//     leaves null.
//  2. Summarize, when it applies: When "Always", or When "TokensExceed"
//     (the default) and the content is over MaxTokens (never without
//     MaxTokens). When "Never" or no Summarize block: the strategy alone
//     shortens the content. See Summaries below.
//  3. The strategy drops parts of the content, one at a time, until it fits.
//     See the strategies below.
//  4. If the content still does not fit, Build fails with an *asl.Error
//     named Agent.ContextOverflow, whose cause gives the estimate, the limit
//     and the locations that could not be dropped (Include locations and
//     summaries).
//
// Strategy "semantic" picks its candidates between steps 1 and 2 (see
// below), and Strategy "summarize" always summarizes at step 2; both then
// shorten what is left as sliding_window does at step 3.
//
// # What is never dropped
//
// The locations Include paths select, and the summaries, are never dropped
// nor summarized. When a part to drop holds such a location inside it, the
// part is not dropped whole: everything in it but those locations is
// dropped instead, and the containers on the way to them stay (with only
// what is kept in them). So Include "$.messages[*].role" lets a sliding
// window drop old messages down to {"role": …}.
//
// # Strategy sliding_window (the default)
//
// It keeps the newest entries:
//
//  1. Arrays first. The arrays it shortens are those reached from the root
//     through object members only ($.messages, $.chat.history, or the root
//     itself when it is an array); arrays inside array elements (a
//     message's parts) are not shortened on their own. Each step takes the
//     largest of these arrays (by its estimate at that moment; ties go to
//     the first in document order) and drops its oldest element (the lowest
//     index still there that is not protected). The largest array is chosen
//     again after every element, so long arrays shrink first and then
//     shrink together.
//  2. Then, if the content is still too large and it is an object, whole
//     top-level members in reverse key order: the last key in byte order
//     first ("z" before "b" before "B"), emptied arrays included.
//
// # Strategy priority_based
//
// Priority lists paths from the most to the least important. A location
// takes the rank of the first path that selects it. The parts that no
// Priority path selects are dropped first, in document order (object
// members by key, array elements oldest first): each is a largest part
// holding no selected location, so when Priority selects $.a.b, $.a's other
// members are dropped one by one and $.a.b stays. Then the matches of the
// last Priority path are dropped, in the order the path selects them
// ($.history[*] drops the oldest element first), then those of the path
// before it, and so on up to the first path. Dropping a location keeps
// what a more important path selects inside it (until that path's turn
// comes); what a less important path selects inside it has gone already.
//
// # Strategy semantic
//
// The candidates are the locations the Candidates paths select in the
// input, each once, that Exclude left; a location inside another may be a
// candidate too. A candidate's text is its value when that is a string,
// else its compact JSON text (object keys sorted), both without what
// Exclude removed. The query (Funcs.Query, which the engine computes from
// Query or Query.$) and the text of every candidate are embedded in one
// call of Funcs.Embed, the query first. A candidate's score is the cosine
// similarity of its vector to the query's (the dot product over the
// product of the lengths, so vectors need not be of unit length; 0 for a
// zero vector). A blank text (empty or only white space, like the string
// "") has no meaning to compare: it is not embedded and scores 0; with no
// other candidate there is no call. A blank query, when there are
// candidates, is an error. The TopK best candidates are
// picked, equal scores in document order; every other candidate is
// dropped, except what Include protects and what a picked candidate holds
// inside it. The rest of the content (what no Candidates path selects)
// stays as it is. Window.Picked lists the picks, best first, with their
// scores.
//
// Then, if the content still does not fit MaxTokens, it is shortened as
// sliding_window does (picks included: the oldest elements go first), and
// Agent.ContextOverflow is raised as with the other strategies.
//
// # Strategy summarize
//
// It summarizes every time, whatever the size, as a Summarize block with
// When "Always" does (see Summaries below): the Target, or the whole
// content, goes to Summarize.Using. Then, if the content still does not
// fit MaxTokens, it is shortened as sliding_window does, never dropping
// the summaries.
//
// # Summaries
//
// Target is the part summarized, the whole content by default. When the
// target is missing (or was excluded), or lies inside an Include location,
// nothing is summarized. The summarizer (see Summarizer) receives the
// target's value after Exclude and returns a summary, any JSON value, which
// replaces the target in the content. Its size goal, targetTokens, is
// ceil(estimate of the target × Ratio) with a Ratio, else MaxTokens minus
// the estimate of the rest of the content (at least 1), else 0 (no size
// given; When "Always" without MaxTokens).
//
// When Include locations lie inside the target, the summary cannot replace
// the target without losing them. Each largest part of the target holding
// no Include location is then summarized on its own, one call each in
// document order, and its summary replaces it; consecutive elements of an
// array form one part, sent as an array, whose summary takes their place as
// one element. The size goal is shared among the parts in proportion to
// their estimates (rounded up, at least 1 each). So with the default target
// and Include ["$.question"], {"question": q, "history": [...], "notes":
// [...]} becomes {"question": q, "history": summary₁, "notes": summary₂}.
//
// After summarizing, if the content is still too large, the strategy drops
// from what is left, never the summaries.
//
// # Determinism
//
// The same input and configuration give the same window, with the same
// summarizer replies and vectors: every choice above depends on document
// order, sizes and scores only, never on map iteration order.
package contextwin
