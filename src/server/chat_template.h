#pragma once
// Chat prompts for the template families in common use, written by hand instead of a
// Jinja engine: the family is recognised from the GGUF's tokenizer.chat_template (or
// named with --chat-template). The rendering leaves out the leading BOS, which the
// tokenizer adds.
#include <optional>
#include <string>
#include <vector>

namespace tps {

enum class ChatFamily { kChatml, kLlama2, kLlama3, kMistral, kPhi3, kGemma };

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

// "chatml" (or "qwen"), "llama2", "llama3", "mistral", "phi3", "gemma"; dashes allowed.
std::optional<ChatFamily> chat_family_from_name(const std::string& name);
const char* chat_family_name(ChatFamily family);
// The family whose markers the Jinja source uses; chatml when none is recognised.
ChatFamily detect_chat_family(const std::string& jinja_template);
// The prompt for `messages`, ending with the assistant's turn opened.
std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages);

}  // namespace tps
