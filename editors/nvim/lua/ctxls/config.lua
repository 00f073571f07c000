--- Options of require("ctxls").setup(): defaults, merging and validation.
local M = {}

---@class ctxls.Options
---@field cmd string[] command that runs the server over stdio
---@field root_markers string[] files or folders that mark a repository root
---@field filetypes string[]|nil attach only to these filetypes; nil: every file buffer
---@field init_options table sent as initializationOptions (docs/protocol.md)
---@field capabilities table|nil client capabilities deep-merged over Neovim's defaults
---@field on_attach fun(client: vim.lsp.Client, bufnr: integer)|nil called after the plugin's own attach
---@field scope string|nil memory scope sent with recall and remember
---@field recall { n: integer, kind: string|string[]|nil, picker: "quickfix"|"select" }
---@field recent { limit: integer }
---@field locate { n: integer } files :CtxLocate lists
---@field open_quickfix boolean open the quickfix window after filling it
---@field codelens boolean show the server's code lenses
---@field progress_messages boolean echo when the server starts and finishes indexing or embedding
---@field native_enable boolean use vim.lsp.config/vim.lsp.enable when this Neovim has them
M.defaults = {
  cmd = { "ctxls", "serve" },
  root_markers = { ".git", ".ctxls", ".hg", ".svn" },
  filetypes = nil,
  init_options = {},
  capabilities = nil,
  on_attach = nil,
  scope = nil,
  recall = { n = 20, kind = nil, picker = "quickfix" },
  recent = { limit = 20 },
  locate = { n = 10 },
  open_quickfix = true,
  codelens = true,
  progress_messages = true,
  native_enable = true,
}

--- Raise the error for option `name`: what it must be and what it was.
local function reject(name, must_be, value)
  error(("ctxls: setup() option %s must be %s, got %s"):format(name, must_be, vim.inspect(value)), 0)
end

local function is_list_of_strings(value)
  if type(value) ~= "table" or not vim.islist(value) or #value == 0 then
    return false
  end
  return vim.iter(value):all(function(item)
    return type(item) == "string" and item ~= ""
  end)
end

--- Whether `value` is an integer from 1 to `most`.
local function is_count_up_to(most)
  return function(value)
    return type(value) == "number" and value >= 1 and value <= most and math.floor(value) == value
  end
end

--- The server's bounds (docs/protocol.md, index/vocabulary.py): a value past
--- them is refused by every request that carries it.
local MAX_RECALL_N, MAX_LOCATE_N, MAX_RECENT_ITEMS, MAX_SCOPE_CHARS = 200, 100, 1000, 256
local RECALL_KINDS = { "code", "doc", "config", "fact", "episode" }

local function is_recall_kind(value)
  return vim.tbl_contains(RECALL_KINDS, value)
end

local function is_boolean(value)
  return type(value) == "boolean"
end

--- Checks of the options: name → { accepts(value), what it must be }. Nested
--- options are named as the user writes them ("recall.n").
local CHECKS = {
  cmd = { is_list_of_strings, 'a non-empty list of strings (the server command, e.g. { "ctxls", "serve" })' },
  root_markers = { is_list_of_strings, 'a non-empty list of file or folder names (e.g. { ".git" })' },
  filetypes = {
    function(v)
      return v == nil or is_list_of_strings(v)
    end,
    "nil (every file buffer) or a non-empty list of filetype names",
  },
  init_options = {
    function(v)
      return type(v) == "table"
    end,
    "a table",
  },
  capabilities = {
    function(v)
      return v == nil or type(v) == "table"
    end,
    "nil or a table",
  },
  on_attach = {
    function(v)
      return v == nil or vim.is_callable(v)
    end,
    "nil or a function(client, bufnr)",
  },
  scope = {
    function(v)
      -- "@global" is the shared tier; other names starting with "@" are reserved.
      return v == nil
        or (type(v) == "string" and v ~= "" and vim.fn.strchars(v) <= MAX_SCOPE_CHARS
          and (v == "@global" or v:sub(1, 1) ~= "@"))
    end,
    ('nil or a memory scope (a non-empty string of at most %d characters, not starting with "@" '
      .. 'but "@global")'):format(MAX_SCOPE_CHARS),
  },
  ["recall.n"] = { is_count_up_to(MAX_RECALL_N), ("an integer from 1 to %d"):format(MAX_RECALL_N) },
  ["recall.kind"] = {
    function(v)
      return v == nil
        or is_recall_kind(v)
        or (type(v) == "table" and vim.islist(v) and #v > 0 and vim.iter(v):all(is_recall_kind))
    end,
    'nil, a kind ("code", "doc", "config", "fact", "episode") or a list of kinds',
  },
  ["recall.picker"] = {
    function(v)
      return v == "quickfix" or v == "select"
    end,
    '"quickfix" or "select"',
  },
  ["recent.limit"] = { is_count_up_to(MAX_RECENT_ITEMS), ("an integer from 1 to %d"):format(MAX_RECENT_ITEMS) },
  ["locate.n"] = { is_count_up_to(MAX_LOCATE_N), ("an integer from 1 to %d"):format(MAX_LOCATE_N) },
  open_quickfix = { is_boolean, "true or false" },
  codelens = { is_boolean, "true or false" },
  progress_messages = { is_boolean, "true or false" },
  native_enable = { is_boolean, "true or false" },
}

--- The defaults overridden by `user`; raises a readable error naming the
--- first bad option and what it must be.
---@param user table|nil
---@return ctxls.Options
function M.resolve(user)
  if user ~= nil and type(user) ~= "table" then
    error(("ctxls: setup() takes a table of options or nothing, got %s"):format(vim.inspect(user)), 0)
  end
  user = user or {}
  -- Checked before merging: tbl_deep_extend would replace the default table
  -- with a number, and reading recall.n from it fails with a bare Lua error.
  for _, key in ipairs({ "init_options", "recall", "recent", "locate" }) do
    if user[key] ~= nil and type(user[key]) ~= "table" then
      reject(key, "a table", user[key])
    end
  end
  local options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user)
  -- Lists replace the default list wholesale: tbl_deep_extend would merge them index by index.
  for _, key in ipairs({ "cmd", "root_markers", "filetypes" }) do
    if user[key] ~= nil then
      options[key] = user[key]
    end
  end
  local names = vim.tbl_keys(CHECKS)
  table.sort(names) -- the same option is named first whatever the table's order
  for _, name in ipairs(names) do
    local accepts, must_be = unpack(CHECKS[name])
    local value = vim.tbl_get(options, unpack(vim.split(name, ".", { plain = true })))
    if not accepts(value) then
      reject(name, must_be, value)
    end
  end
  return options
end

return M
