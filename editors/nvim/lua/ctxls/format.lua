--- Conversions from protocol results (docs/protocol.md) to quickfix items and
--- messages. No requests; only callers' lines are read, to show the call.
local M = {}

--- JSON null arrives as vim.NIL; treat it like an absent field.
function M.present(value)
  if value == vim.NIL then
    return nil
  end
  return value
end

local function first_line(text)
  if type(text) ~= "string" then
    return ""
  end
  return text:match("^%s*([^\n]*)") or ""
end

--- Why a partial answer may miss something, as the server says it (still
--- indexing, no vectors yet, an index that cannot be updated …).
---@param result table a recall or locate result with `partial`
---@return string
function M.incomplete(result)
  return "results may be incomplete: " .. (result.partialReason or "still indexing")
end

--- Why a recall's hits are no answer (docs/protocol.md: `weak`: the
--- repository looks unrelated to the query), or nil when they are one.
---@param result table a recall result
---@return string|nil
function M.weak(result)
  if M.present(result.weak) ~= true then
    return nil
  end
  return "weak: " .. (M.present(result.weakReason) or "the repository looks unrelated to the query")
end

--- The server cuts a locate text longer than this to its first and last
--- halves (index/vocabulary.py MAX_LOCATE_CHARS, docs/protocol.md), as the
--- CLI and the MCP bridge do before sending: a log of any size is answered.
local MAX_LOCATE_CHARS = 40000

--- What is sent of a locate text: past MAX_LOCATE_CHARS characters its
--- first and last 20,000, a newline between (daemon/client.py's cut); the
--- server reads no more, and a 66 MiB buffer was over a message's bound.
---@param text string
---@return string
function M.locate_text(text)
  local chars = vim.fn.strchars(text)
  if chars <= MAX_LOCATE_CHARS then
    return text
  end
  local half = MAX_LOCATE_CHARS / 2
  return vim.fn.strcharpart(text, 0, half) .. "\n" .. vim.fn.strcharpart(text, chars - half, half)
end

--- Hits of a `ctxls/recall` result, best first, at most `n`, whether the
--- server answered `{ hits }` (one kind asked) or `{ groups = { kind = hits
--- } }`. Groups of several kinds are merged on `calibrated`
--- (docs/protocol.md: a `score` compares within one source only); a server
--- without `calibrated` on every hit (older than it) is merged on `score`.
--- Ties keep each group's order. The server applies `n` to each kind: the
--- merged list is cut to `n` here (n = 1 showed a hit of every kind).
---@param result { hits: table[]|nil, groups: table<string, table[]>|nil }
---@param n integer|nil the most hits shown; nil: all
---@return table[]
function M.recall_hits(result, n)
  local function at_most_n(hits)
    return (n and #hits > n) and vim.list_slice(hits, 1, n) or hits
  end
  if result.hits then
    return at_most_n(result.hits)
  end
  local hits, place = {}, {}
  local all_calibrated = true
  for _, kind_hits in pairs(result.groups or {}) do
    for index, hit in ipairs(kind_hits) do
      table.insert(hits, hit)
      place[hit] = index
      all_calibrated = all_calibrated and type(M.present(hit.calibrated)) == "number"
    end
  end
  local key = all_calibrated and "calibrated" or "score"
  table.sort(hits, function(a, b)
    if a[key] ~= b[key] then
      return a[key] > b[key]
    end
    if place[a] ~= place[b] then
      return place[a] < place[b]
    end
    return a.path < b.path
  end)
  return at_most_n(hits)
end

--- What a hit is, in a few words: the symbol or section for files, the first
--- line of the text for written memory.
function M.hit_label(hit)
  local label
  if hit.kind == "fact" or hit.kind == "episode" then
    label = first_line(hit.body) ~= "" and first_line(hit.body) or hit.path
  else
    local chunk = M.present(hit.chunk)
    label = (chunk and M.present(chunk.symbol)) or hit.path
  end
  if hit.kind ~= "code" then
    label = ("[%s] %s"):format(hit.kind, label)
  end
  return label
end

--- A quickfix item for a hit. Written memory has no file: its item carries
--- text only (quickfix shows it, jumping is not possible).
function M.hit_to_qf_item(hit)
  local item = { text = M.hit_label(hit) }
  if M.present(hit.uri) and M.present(hit.range) then
    item.filename = vim.uri_to_fname(hit.uri)
    item.lnum = hit.range.start.line + 1
    item.col = hit.range.start.character + 1
  end
  return item
end

--- Quickfix items for `ctxls/locate`'s files, best first: each at the line its
--- evidence names (a traceback frame's line) or else its best chunk, with the
--- score and why it was chosen ("frame: pkg/retry.py:6 in retry_upload").
---@param files { path: string, uri: string|nil, score: number, why: table[]|nil, chunks: table[]|nil }[]
function M.located_to_qf_items(files)
  local items = {}
  for _, file in ipairs(files) do
    local item = { text = ("%.2f"):format(file.score) }
    if M.present(file.uri) then
      item.filename = vim.uri_to_fname(file.uri)
      item.lnum = 1
      local chunk = (M.present(file.chunks) or {})[1]
      if chunk then
        item.lnum = chunk.startLine + 1
      end
    else
      item.text = ("%s %s"):format(file.path, item.text)
    end
    local reasons, placed = {}, false
    for _, why in ipairs(M.present(file.why) or {}) do
      -- The first reason that names a line places it, whichever comes first
      -- (a `semantic` reason, which names none, may lead a traceback's `frame`).
      if M.present(why.line) and item.filename and not placed then
        item.lnum = why.line + 1
        placed = true
      end
      table.insert(reasons, ("%s: %s"):format(why.signal, why.detail))
    end
    if #reasons > 0 then
      item.text = ("%s %s"):format(item.text, table.concat(reasons, "; "))
    end
    table.insert(items, item)
  end
  return items
end

--- One line for vim.ui.select: what the hit is, then where.
function M.hit_select_label(hit)
  local range = M.present(hit.range)
  if not range then
    return M.hit_label(hit)
  end
  return ("%s  %s:%d"):format(M.hit_label(hit), hit.path, range.start.line + 1)
end

local CALLER_KIND_WORDS = { call = "called from", decorator = "decorator in", value = "value use in" }

--- Quickfix items for an Impact's callers, confirmed ones first, each group
--- sorted by file and position, each "called from <enclosing symbol>: <the
--- calling line>"; an unconfirmed one says so, with the server's reason.
---@param callers { uri: string, range: table, symbol: string|nil, confirmed: boolean, kind: string|nil, reason: string|nil }[]
---@param position_encoding string the client's, to turn UTF-16 columns into bytes
function M.callers_to_qf_items(callers, position_encoding)
  local items = vim.lsp.util.locations_to_items(callers, position_encoding)
  local confirmed, unconfirmed = {}, {}
  for _, item in ipairs(items) do
    local caller = item.user_data
    local label = ("%s %s"):format(
      CALLER_KIND_WORDS[M.present(caller.kind)] or "called from",
      M.present(caller.symbol) or "(module)"
    )
    if not caller.confirmed then
      local reason = M.present(caller.reason)
      label = label .. (reason and (" (unconfirmed: %s)"):format(reason) or " (unconfirmed)")
    end
    item.text = ("%s: %s"):format(label, vim.trim(item.text))
    table.insert(caller.confirmed and confirmed or unconfirmed, item)
  end
  return vim.list_extend(confirmed, unconfirmed)
end

--- Quickfix items for the other definitions a symbol matched (the answer,
--- and the callers listed, are the first one's).
---@param impact table an `Impact`
---@param position_encoding string the client's, to turn UTF-16 columns into bytes
function M.other_definition_qf_items(impact, position_encoding)
  local items = {}
  for index, answer in ipairs(impact.perDefinition or {}) do
    if index > 1 then
      local definition = answer.definition
      -- Its name (`def`), below the decorators and comments its range starts with.
      local selection = M.present(definition.selectionRange)
      local item = vim.lsp.util.locations_to_items(
        { { uri = definition.uri, range = selection or definition.range } },
        position_encoding
      )[1]
      table.insert(items, {
        filename = item.filename,
        lnum = item.lnum,
        col = selection and item.col or 1,
        text = ("other definition: %s (%d confirmed, risk %s)"):format(
          M.present(definition.symbol) or "?",
          answer.confirmed,
          answer.risk
        ),
      })
    end
  end
  return items
end

--- Text-only quickfix items for an Impact's hedges (what the analysis may miss),
--- after the callers: the full sentences stay readable there.
---@param hedges string[]
function M.hedge_qf_items(hedges)
  return vim.tbl_map(function(hedge)
    return { text = "note: " .. hedge }
  end, hedges or {})
end

local function plural(count, word)
  return ("%d %s%s"):format(count, word, count == 1 and "" or "s")
end

local RISK_HIGHLIGHTS = { low = "DiagnosticOk", med = "DiagnosticWarn", high = "DiagnosticError" }

--- Chunks for nvim_echo: one summary line (the hedges go to the quickfix list).
---@param impact table an `Impact`
---@return [string, string][]
function M.impact_echo_chunks(impact)
  local chunks = {
    { ("ctxls impact of %s: "):format(impact.symbol), "Normal" },
    { "risk " .. impact.risk, RISK_HIGHLIGHTS[impact.risk] or "Normal" },
    {
      -- The server words the counts (`summary`), so Neovim and VS Code say the same.
      (" · %s%s · %s · complexity %d"):format(
        impact.summary,
        (impact.definitionsMatched or 1) > 1 and (" · best of %d definitions"):format(impact.definitionsMatched) or "",
        plural(#impact.callees, "callee"),
        impact.complexity
      ),
      "Normal",
    },
  }
  return chunks
end

local function time_ago(ms, now_ms)
  local seconds = math.max(0, math.floor((now_ms - ms) / 1000))
  if seconds < 60 then
    return "just now"
  elseif seconds < 3600 then
    return math.floor(seconds / 60) .. " min ago"
  elseif seconds < 86400 then
    return math.floor(seconds / 3600) .. " h ago"
  end
  return math.floor(seconds / 86400) .. " d ago"
end

--- A quickfix item for a `ctxls/recentActivity` row. The row names a file and
--- a symbol, not a line: `symbol_lines` maps a file's symbols to 0-based lines.
---@param activity { id: string, symbol: string|nil, kind: string, lastEditedAt: number, edits: integer }
---@param root string the repository root the id is relative to
---@param symbol_lines table<string, integer>
---@param now_ms number
function M.activity_to_qf_item(activity, root, symbol_lines, now_ms)
  local symbol = M.present(activity.symbol)
  local line = symbol and symbol_lines[symbol] or 0
  return {
    filename = vim.fs.joinpath(root, activity.id),
    lnum = line + 1,
    col = 1,
    text = ("%s · %s · %s"):format(
      symbol or "(module)",
      plural(activity.edits, "edit"),
      time_ago(activity.lastEditedAt, now_ms)
    ),
  }
end

--- Qualified symbol name → 0-based line of its definition (its name's line,
--- `selectionRange`, below the comments and decorators `range` starts with),
--- from a `textDocument/documentSymbol` result (ctxls puts the qualified name
--- in DocumentSymbol.detail).
---@param symbols table[]|nil DocumentSymbol[] or SymbolInformation[]
---@return table<string, integer>
function M.symbol_lines(symbols)
  local lines = {}
  local function visit(list, parent)
    for _, symbol in ipairs(list or {}) do
      if symbol.location then -- SymbolInformation
        lines[symbol.name] = symbol.location.range.start.line
      else
        local qualified = (type(symbol.detail) == "string" and symbol.detail ~= "") and symbol.detail
          or (parent and (parent .. "." .. symbol.name) or symbol.name)
        lines[qualified] = (M.present(symbol.selectionRange) or symbol.range).start.line
        visit(symbol.children, qualified)
      end
    end
  end
  visit(symbols)
  return lines
end

return M
