--- Starting the server (one client per repository root) and talking to it.
local M = {}

M.name = "ctxls"

-- Neovim 0.11 made client functions methods (client:request); 0.10 has plain fields.
local has_client_methods = vim.fn.has("nvim-0.11") == 1

--- The repository root of a file buffer, or nil for buffers that are not files.
---@param bufnr integer
---@param root_markers string[]
---@return string|nil
function M.find_root(bufnr, root_markers)
  if vim.bo[bufnr].buftype ~= "" or vim.api.nvim_buf_get_name(bufnr) == "" then
    return nil
  end
  return vim.fs.root(bufnr, root_markers)
end

--- The ctxls client for the current buffer; from a buffer without one (the
--- quickfix window, a scratch buffer) the client of the previous window's
--- buffer, else any running one. A client being stopped (:CtxRestart) comes
--- after every other.
---@return vim.lsp.Client|nil
function M.get()
  local buffers = { vim.api.nvim_get_current_buf() }
  local previous_window = vim.fn.win_getid(vim.fn.winnr("#"))
  if previous_window ~= 0 then
    table.insert(buffers, vim.api.nvim_win_get_buf(previous_window))
  end
  local stopping
  for _, filter in ipairs(vim.list_extend(
    vim.tbl_map(function(bufnr) return { name = M.name, bufnr = bufnr } end, buffers),
    { { name = M.name } }
  )) do
    for _, client in ipairs(vim.lsp.get_clients(filter)) do
      if not M.is_stopped(client) then
        return client
      end
      stopping = stopping or client
    end
  end
  return stopping
end

--- Whether `cmd`'s program can be run (found on PATH or an executable path).
---@param cmd string[]
function M.executable(cmd)
  return vim.fn.executable(cmd[1]) == 1
end

---@param client vim.lsp.Client
---@param force boolean|nil
function M.stop(client, force)
  if has_client_methods then
    return client:stop(force)
  end
  return client.stop(force)
end

---@param client vim.lsp.Client
function M.is_stopped(client)
  if has_client_methods then
    return client:is_stopped()
  end
  return client.is_stopped()
end

---@param client vim.lsp.Client
---@param method string
---@param params table
---@param handler fun(err: lsp.ResponseError|nil, result: any, ctx: lsp.HandlerContext)
---@param bufnr integer|nil
function M.request(client, method, params, handler, bufnr)
  if has_client_methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

---@param client vim.lsp.Client
---@param method string
---@param params table
---@param timeout_ms integer
---@return { err: lsp.ResponseError|nil, result: any }|nil response, string|nil error
function M.request_sync(client, method, params, timeout_ms)
  if has_client_methods then
    return client:request_sync(method, params, timeout_ms)
  end
  return client.request_sync(method, params, timeout_ms)
end

--- Capabilities Neovim announces plus what this plugin handles itself.
---@param extra table|nil
local function client_capabilities(extra)
  local capabilities = vim.tbl_deep_extend("force", vim.lsp.protocol.make_client_capabilities(), {
    workspace = { codeLens = { refreshSupport = true } },
  })
  return vim.tbl_deep_extend("force", capabilities, extra or {})
end

--- The client configuration shared by both ways of starting the server.
---@param options ctxls.Options
---@param hooks { on_attach: function, handlers: table<string, lsp.Handler>, commands: table<string, function> }
local function lsp_config(options, hooks)
  return {
    name = M.name,
    cmd = options.cmd,
    filetypes = options.filetypes,
    -- An empty Lua table encodes as a JSON array; the server wants an object.
    init_options = next(options.init_options) == nil and vim.empty_dict() or options.init_options,
    capabilities = client_capabilities(options.capabilities),
    on_attach = hooks.on_attach,
    handlers = hooks.handlers,
    commands = hooks.commands,
  }
end

local augroup = vim.api.nvim_create_augroup("ctxls.start", { clear = true })

--- Start (or reuse, per root) the server for every file buffer inside a repository.
---@param options ctxls.Options
---@param hooks { on_attach: function, handlers: table<string, lsp.Handler>, commands: table<string, function> }
---@return boolean started false when the server executable is missing (nothing is started)
function M.enable(options, hooks)
  local config = lsp_config(options, hooks)
  vim.api.nvim_clear_autocmds({ group = augroup })
  if not M.executable(options.cmd) then
    -- Starting anyway would make Neovim report a spawn failure for every buffer.
    if vim.lsp.is_enabled and vim.lsp.is_enabled(M.name) then
      vim.lsp.enable(M.name, false)
    end
    return false
  end

  if options.native_enable and vim.lsp.config and vim.lsp.enable then
    -- on_dir is never called outside a repository, so no client starts there.
    config.root_dir = function(bufnr, on_dir)
      local root = M.find_root(bufnr, options.root_markers)
      if root then
        on_dir(root)
      end
    end
    vim.lsp.config(M.name, config)
    vim.lsp.enable(M.name)
    return true
  end

  local function start(bufnr)
    if options.filetypes and not vim.tbl_contains(options.filetypes, vim.bo[bufnr].filetype) then
      return
    end
    local root = M.find_root(bufnr, options.root_markers)
    if root then
      -- vim.lsp.start reuses the running client with the same name and root.
      vim.lsp.start(vim.tbl_extend("force", config, { root_dir = root }), { bufnr = bufnr })
    end
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = augroup,
    callback = function(event)
      start(event.buf)
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype ~= "" then
      start(bufnr)
    end
  end
  return true
end

return M
