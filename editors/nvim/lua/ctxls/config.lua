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

--- The defaults overridden by `user`; raises a readable error on a bad value.
---@param user table|nil
---@return ctxls.Options
function M.resolve(user)
  local options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user or {})
  -- Lists replace the default list wholesale: tbl_deep_extend would merge them index by index.
  for _, key in ipairs({ "cmd", "root_markers", "filetypes" }) do
    if user and user[key] ~= nil then
      options[key] = user[key]
    end
  end
  vim.validate({
    cmd = { options.cmd, "table" },
    root_markers = { options.root_markers, "table" },
    filetypes = { options.filetypes, "table", true },
    init_options = { options.init_options, "table" },
    capabilities = { options.capabilities, "table", true },
    on_attach = { options.on_attach, "function", true },
    scope = { options.scope, "string", true },
    ["recall.n"] = { options.recall.n, "number" },
    ["recent.limit"] = { options.recent.limit, "number" },
    ["locate.n"] = { options.locate.n, "number" },
    open_quickfix = { options.open_quickfix, "boolean" },
    codelens = { options.codelens, "boolean" },
    progress_messages = { options.progress_messages, "boolean" },
    native_enable = { options.native_enable, "boolean" },
  })
  if #options.cmd == 0 then
    error("ctxls: cmd must name the server executable")
  end
  if options.recall.picker ~= "quickfix" and options.recall.picker ~= "select" then
    error('ctxls: recall.picker must be "quickfix" or "select"')
  end
  return options
end

return M
