--- Code lenses ("3 callers · risk med") from the server, kept fresh.
local M = {}

--- Buffers showing lenses (bufnr → true): server refreshes touch only these.
local lens_buffers = {}

local function refresh_buffer(bufnr)
  if vim.api.nvim_buf_is_loaded(bufnr) then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
  end
end

---@param client vim.lsp.Client
local function refresh_client_buffers(client)
  for bufnr in pairs(client.attached_buffers) do
    if lens_buffers[bufnr] then
      refresh_buffer(bufnr)
    end
  end
end

--- Show lenses in a buffer the client just attached to and refresh them when
--- the user comes back to the buffer or leaves insert mode.
---@param client vim.lsp.Client
---@param bufnr integer
function M.attach(client, bufnr)
  if not client.server_capabilities.codeLensProvider then
    return
  end
  local group = vim.api.nvim_create_augroup("ctxls.codelens." .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      refresh_buffer(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd("LspDetach", {
    group = group,
    buffer = bufnr,
    callback = function(event)
      if event.data.client_id == client.id then
        lens_buffers[bufnr] = nil
        vim.api.nvim_del_augroup_by_id(group)
      end
    end,
  })
  lens_buffers[bufnr] = true
  refresh_buffer(bufnr)
end

--- Handler for the server's `workspace/codeLens/refresh` request (sent after
--- edits change caller counts). Neovim has no default handler for it.
---@type lsp.Handler
function M.on_refresh_request(_, _, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    refresh_client_buffers(client)
  end
  return vim.NIL
end

--- Lenses computed while the first index was running count callers in the
--- files indexed so far; refresh them once the server reports the index done.
---@param client_name string
function M.refresh_after_indexing(client_name)
  vim.api.nvim_create_autocmd("LspProgress", {
    group = vim.api.nvim_create_augroup("ctxls.codelens.progress", { clear = true }),
    pattern = "end",
    callback = function(event)
      local client = vim.lsp.get_client_by_id(event.data.client_id)
      if client and client.name == client_name and client.server_capabilities.codeLensProvider then
        refresh_client_buffers(client)
      end
    end,
  })
end

return M
