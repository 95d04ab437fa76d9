#include "server/chat_template.h"

#include <cctype>

namespace tps {

std::optional<ChatFamily> chat_family_from_name(const std::string& name) {
  std::string n;
  for (char c : name)
    if (c != '-' && c != '_') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "chatml" || n == "qwen" || n == "qwen2") return ChatFamily::kChatml;
  if (n == "llama2") return ChatFamily::kLlama2;
  if (n == "llama3") return ChatFamily::kLlama3;
  if (n == "mistral") return ChatFamily::kMistral;
  if (n == "phi3") return ChatFamily::kPhi3;
  if (n == "gemma") return ChatFamily::kGemma;
  return std::nullopt;
}

const char* chat_family_name(ChatFamily family) {
  switch (family) {
    case ChatFamily::kChatml: return "chatml";
    case ChatFamily::kLlama2: return "llama2";
    case ChatFamily::kLlama3: return "llama3";
    case ChatFamily::kMistral: return "mistral";
    case ChatFamily::kPhi3: return "phi3";
    case ChatFamily::kGemma: return "gemma";
  }
  return "chatml";
}

ChatFamily detect_chat_family(const std::string& t) {
  auto has = [&](const char* s) { return t.find(s) != std::string::npos; };
  if (has("<|im_start|>")) return ChatFamily::kChatml;
  if (has("<|start_header_id|>")) return ChatFamily::kLlama3;
  if (has("<start_of_turn>")) return ChatFamily::kGemma;
  if (has("<|user|>") && has("<|end|>")) return ChatFamily::kPhi3;
  if (has("[INST]")) return has("<<SYS>>") ? ChatFamily::kLlama2 : ChatFamily::kMistral;
  return ChatFamily::kChatml;
}

namespace {

// Families without a system turn fold the system text into the first user message.
std::vector<ChatMessage> fold_system(const std::vector<ChatMessage>& messages, const std::string& separator) {
  std::vector<ChatMessage> out;
  std::string system;
  for (const auto& m : messages) {
    if (m.role == "system") {
      system += (system.empty() ? "" : "\n") + m.content;
      continue;
    }
    out.push_back(m);
    if (m.role == "user" && !system.empty()) {
      out.back().content = system + separator + m.content;
      system.clear();
    }
  }
  if (!system.empty()) out.insert(out.begin(), {"user", system});
  return out;
}

std::string render_llama2(const std::vector<ChatMessage>& messages) {
  std::string out, system;
  bool first = true;
  for (const auto& m : messages) {
    if (m.role == "system") {
      system = m.content;
    } else if (m.role == "user") {
      if (!first) out += "<s>";
      out += "[INST] ";
      if (!system.empty()) out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
      system.clear();
      out += m.content + " [/INST]";
      first = false;
    } else {
      out += " " + m.content + " </s>";
    }
  }
  return out;
}

}  // namespace

std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages) {
  std::string out;
  switch (family) {
    case ChatFamily::kChatml:
      for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      return out + "<|im_start|>assistant\n";
    case ChatFamily::kLlama3:
      for (const auto& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
      return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case ChatFamily::kPhi3:
      for (const auto& m : messages) out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      return out + "<|assistant|>\n";
    case ChatFamily::kGemma:
      for (const auto& m : fold_system(messages, "\n\n"))
        out += "<start_of_turn>" + std::string(m.role == "assistant" ? "model" : m.role) + "\n" + m.content +
               "<end_of_turn>\n";
      return out + "<start_of_turn>model\n";
    case ChatFamily::kMistral:
      for (const auto& m : fold_system(messages, "\n\n")) {
        if (m.role == "user") {
          out += "[INST] " + m.content + " [/INST]";
        } else {
          out += m.content + "</s>";
        }
      }
      return out;
    case ChatFamily::kLlama2:
      return render_llama2(messages);
  }
  return out;
}

}  // namespace tps
